"""BERT for extractive question answering: start and end logits per token."""

import keras
from keras import ops

from keras_bert.decoding.answers import answer_text_function
from keras_bert.decoding.run_text import run_text_function
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.span_answer_methods import SpanAnswerMethods
from keras_bert.models.span_answers import is_question_and_context
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.validation import check_text_only_options

# The logit of a position that cannot hold an answer: its probability is 0
# in float32, while a loss on it (a bad label) stays finite.
MASKED_LOGIT = -10000.0


@keras.saving.register_keras_serializable(package="keras_bert")
class BertQuestionAnswerer(SpanAnswerMethods, Task):
    """BERT for span question answering (SQuAD), as in the BERT paper.

    One dense layer on every token of the backbone's `sequence_output`
    gives a start and an end logit per position; the answer is the span
    with the best start + end logit (see `keras_bert.fine_tuning.squad`). Inputs
    are packed `[CLS] question [SEP] context [SEP]`, the context in segment
    1. Positions that cannot hold an answer — the question, both `[SEP]`s
    and padding — get the logit `-10000` (probability 0). `[CLS]` stays
    open: it is the "no answer" position of SQuAD v2.0 and the label of a
    window that does not contain the answer.

    The model is compiled on construction: the loss is the mean of the
    start and end cross-entropies (`0.5 * start + 0.5 * end`), metrics
    `accuracy` of each, AdamW with learning rate 5e-5. Call `compile()` to
    change it. Fit it on `(features, {"start_logits": start_positions,
    "end_logits": end_positions})`, or, with a `preprocessor`, on raw
    SQuAD-style data: `fit(x={"question": [...], "context": [...]},
    y={"text": [...], "answer_start": [...]})`, cut into windows as
    `recipes/squad.py` cuts them (`keras_bert.models.span_answer_methods`;
    `evaluate` on the same adds SQuAD's exact match and F1). The
    backbone's pooler is not used and is frozen; checkpoints are written
    without it, as `transformers` writes a `BertForQuestionAnswering`.

    Args:
        backbone: `keras_bert.BertBackbone`.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`), int32 `(batch_size, sequence_length)`.

    Outputs: dict of float32 `start_logits` and `end_logits`, each
        `(batch_size, sequence_length)`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    model = keras_bert.BertQuestionAnswerer(backbone)
    features = {  # [CLS] q q [SEP] c c c [SEP]
        "token_ids": np.array([[2, 9, 8, 3, 10, 11, 12, 3]] * 4),
        "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 1, 1]] * 4),
        "padding_mask": np.ones((4, 8), "int32"),
    }
    labels = {"start_logits": np.array([4, 5, 0, 6]),
              "end_logits": np.array([5, 5, 0, 6])}
    model.fit(features, labels, epochs=1, verbose=0)
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805), 4.2
        - [Rajpurkar et al., 2018](https://arxiv.org/abs/1806.03822)
          (SQuAD v2.0)
    """

    TASK_NAME = "question_answering"
    # A question and its context window: run_squad.py's max_seq_length.
    DEFAULT_SEQUENCE_LENGTH = 384

    def __init__(self, backbone, **kwargs):
        # === Layers ===
        self.backbone = backbone
        # Unused here (Hugging Face's BertForQuestionAnswering has none):
        # frozen, so that training does not warn about its missing
        # gradients.
        backbone.pooler_dense.trainable = False
        self.span_dense = logits_dense(2, backbone, name="span_logits")

        # === Functional Model ===
        inputs = keras_inputs()
        sequence = backbone(inputs)["sequence_output"]
        logits = self.span_dense(sequence)  # (batch, seq, 2)
        can_answer = answer_positions(
            inputs["segment_ids"], inputs["padding_mask"]
        )
        logits = ops.where(can_answer[:, :, None], logits, MASKED_LOGIT)
        outputs = {
            "start_logits": keras.layers.Identity(name="start_logits")(
                logits[:, :, 0]
            ),
            "end_logits": keras.layers.Identity(name="end_logits")(
                logits[:, :, 1]
            ),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        self.compile()

    def predict(
        self,
        x,
        batch_size=None,
        verbose="auto",
        steps=None,
        callbacks=None,
        **options,
    ):
        """Logits for ids; answers, as the exported model gives, for text.

        On the ids dict this is `keras.Model.predict`: `start_logits` and
        `end_logits`. On raw text — a dict of `question` and `context`
        strings, one question per context — it needs the model's
        `preprocessor` and returns what the model's SavedModel
        `serving_default` returns (`keras_bert.serving.export_saved_model`
        with this preprocessor and `options`), computed by the same
        function (`keras_bert.decoding.answers`): contexts of any
        length are read in overlapping windows of
        `preprocessor.sequence_length` tokens, and each answer is the best
        span over its windows.

        Args:
            x: the ids dict (`token_ids`, `segment_ids`, `padding_mask`),
                or a dict of `question` and `context`: lists, arrays or
                tensors of strings, of one length (or a tuple of the two).
            batch_size: int or `None`. Examples per batch (on text:
                questions, however many windows their contexts make).
                Defaults to 32.
            verbose: `"auto"`, 0 or 1. Progress bar.
            steps, callbacks: as `keras.Model.predict`; ids only.
            **options: on text only, the export's options, with its
                defaults: `doc_stride` (128), `max_query_length` (64),
                `max_answer_length` (30), `n_best_size` (20),
                `version_2_with_negative` (`False`),
                `null_score_diff_threshold` (0.0); see
                `keras_bert.decoding.answers.answer_text_function`.

        Returns:
            On ids, a dict of float32 `start_logits` and `end_logits`
            `(num_examples, sequence_length)`. On text, a dict of numpy
            arrays `(num_questions,)`: `answer` (str), its `start` and `end`
            in the context in Unicode code points (int32;
            `context[start:end] == answer`) and `score` (float32, the
            span's start + end logit; `-1e9`, answer `""`, when the context
            has no possible span).

        Example:
        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who",
                      "jumped", "the", "fox", "over", "dog", "?", "."]
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
            hidden_dim=8, intermediate_dim=32, max_sequence_length=16,
        )
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(vocabulary), sequence_length=16
        )
        model = keras_bert.BertQuestionAnswerer(
            backbone, preprocessor=preprocessor
        )
        questions = ["Who jumped?", "Who jumped?"]
        contexts = ["The fox jumped.", "The dog jumped over the fox. " * 4]
        answers = model.predict(  # the long context: several windows
            {"question": questions, "context": contexts},
            doc_stride=4, max_query_length=4, verbose=0,
        )
        sorted(answers)  # ['answer', 'end', 'score', 'start']
        answers["answer"].shape  # (2,)
        ```
        """
        if not is_question_and_context(x):
            check_text_only_options(f"{type(self).__name__}.predict", options)
            return super().predict(
                x,
                batch_size=batch_size,
                verbose=verbose,
                steps=steps,
                callbacks=callbacks,
            )
        if isinstance(x, tuple):
            x = {"question": x[0], "context": x[1]}
        return run_text_function(
            self,
            answer_text_function,
            x,
            batch_size=batch_size,
            verbose=verbose,
            steps=steps,
            callbacks=callbacks,
            **options,
        )

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's SQuAD setup.

        Args:
            optimizer: `"auto"` for AdamW with `keras_bert.training.
                TRAINING_DEFAULTS["question_answering"]` (5e-5, weight
                decay 0.01 except LayerNorm and biases, global-norm
                clipping 1.0).
            loss: `"auto"` for the mean of the start and end
                cross-entropies on logits.
            metrics: `"auto"` for the accuracy of each position.
            **kwargs: passed to `keras.Model.compile`, and
                `gradient_accumulation_steps` (see `Task.compile`).
        """
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        if loss == "auto":
            loss = {
                name: keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                )
                for name in ("start_logits", "end_logits")
            }
            kwargs.setdefault(
                "loss_weights", {"start_logits": 0.5, "end_logits": 0.5}
            )
        if metrics == "auto":
            metrics = {
                name: [keras.metrics.SparseCategoricalAccuracy("accuracy")]
                for name in ("start_logits", "end_logits")
            }
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )


def answer_positions(segment_ids, padding_mask):
    """Where an answer may start or end: `[CLS]` and the context tokens.

    Args:
        segment_ids: int `(batch_size, sequence_length)`; the context is
            segment 1.
        padding_mask: int `(batch_size, sequence_length)`; 1 = real token.

    Returns a bool tensor `(batch_size, sequence_length)`: true at position
    0 and at every real segment-1 token except the last real token (the
    final `[SEP]`).
    """
    real = ops.cast(padding_mask, "int32")
    positions = ops.cumsum(ops.ones_like(real), axis=1) - 1
    last = ops.sum(real, axis=1, keepdims=True) - 1
    context = (
        ops.equal(ops.cast(segment_ids, "int32"), 1)
        & ops.equal(real, 1)
        & ops.not_equal(positions, last)
    )
    return context | ops.equal(positions, 0)
