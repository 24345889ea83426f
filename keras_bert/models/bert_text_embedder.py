"""BERT as a sentence encoder: one embedding per text."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers.sentence_pooling import SentencePooling
from keras_bert.layers.sentence_pooling import check_pooling
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.small_calls import run_in_chunks
from keras_bert.models.task import Task
from keras_bert.models.text_inputs import texts_of
from keras_bert.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedder(Task):
    """BERT for sentence embeddings, as sentence-transformers computes them.

    The backbone's `sequence_output`, pooled into one vector per text
    (`keras_bert.layers.SentencePooling`: the `[CLS]` vector, or the mean or
    maximum over the real tokens), optionally L2-normalised, in float32.
    This is sentence-transformers' `Transformer -> Pooling [-> Normalize]`
    stack; with the same weights, pooling and normalisation the embeddings
    are the same (docs/embeddings.md gives the difference and the command
    that prints it).

    `from_preset` / `from_checkpoint` read the pooling and normalisation
    from a checkpoint's sentence-transformers files: `modules.json` (a
    `sentence_transformers.models.Normalize` module means
    `normalize=True`), the Pooling module's `config.json`
    (`pooling_mode_cls_token`, `pooling_mode_mean_tokens`,
    `pooling_mode_max_tokens`) and `sentence_bert_config.json`'s
    `max_seq_length` (the attached preprocessor's `sequence_length`). A
    checkpoint without `modules.json` gets `pooling="mean"`,
    `normalize=False` and 512 tokens (BERT's positions, capped by the
    model's), with a logged warning; arguments given to `from_checkpoint`
    override what the files say. So
    `BertTextEmbedder.from_preset("all_minilm_l6_v2_en")` is mean pooling,
    normalised, 256 tokens: what `SentenceTransformer(
    "sentence-transformers/all-MiniLM-L6-v2")` gives.

    With a `preprocessor`, `predict` takes raw strings (a list, array or
    `tf.data.Dataset` of `str`): tokenized in the `tf.data` pipeline, each
    batch cut to its longest row. An empty string is `[CLS] [SEP]`, as in
    sentence-transformers, and gets the pooling of those two tokens (a
    finite, non-zero vector for a trained model). A text longer than the
    preprocessor's `sequence_length` is truncated, as sentence-transformers
    truncates at its `max_seq_length`.

    The model is not compiled: give `compile` the loss you train with (a
    contrastive loss over in-batch negatives, for instance). The
    backbone's pooler (`pooler_dense`), which the embeddings do not read,
    is frozen: training the embedder leaves it as it was. To serve it,
    `keras_bert.serving.export_saved_model(model, export_dir)`: its
    `serving_default` takes `text` (string `(batch,)`) and returns
    `embedding` (float32 `(batch, hidden_dim)`).

    Args:
        backbone: `keras_bert.BertBackbone`.
        pooling: str. `"cls"` (the first token's vector), `"mean"` (mean
            over real tokens) or `"max"` (maximum over real tokens).
            Defaults to `"mean"`.
        normalize: bool. Divide each embedding by its L2 norm, so that a
            dot product is the cosine similarity. Defaults to `True`.
        preprocessor: `keras_bert.BertPreprocessor` or `None`. Turns raw
            text into the backbone's inputs; `None` (the default): the
            model takes ids only.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`, int32 `(batch_size, sequence_length)`), or raw text
        with a preprocessor (`predict`).

    Outputs: the embeddings, a float32 tensor `(batch_size, hidden_dim)`.

    Example:
    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "a", "good", "bad", "film", "book"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=16,
    )
    embedder = keras_bert.BertTextEmbedder(
        backbone, pooling="mean", normalize=True, preprocessor=preprocessor
    )
    embeddings = embedder.predict(["a good film", "a bad book"], verbose=0)
    embeddings.shape  # (2, 8), each row of norm 1
    keras_bert.similarity(embeddings[:1], embeddings)  # (1, 2) cosines
    # Ids in, as every task model: the embeddings tensor out.
    embedder({
        "token_ids": np.array([[2, 5, 6, 8, 3]]),
        "segment_ids": np.zeros((1, 5), "int32"),
        "padding_mask": np.ones((1, 5), "int32"),
    })  # (1, 8)
    ```

    References:
    - [Reimers and Gurevych, 2019](https://arxiv.org/abs/1908.10084):
      Sentence-BERT.
    """

    TASK_NAME = "text_embedder"
    TEXT_METHODS = ("predict",)
    # sentence-transformers truncates a BERT checkpoint without
    # sentence_bert_config.json at the model's maximum (512 positions);
    # a checkpoint's own max_seq_length wins (keras_bert.checkpoints.heads).
    DEFAULT_SEQUENCE_LENGTH = 512

    def __init__(self, backbone, pooling="mean", normalize=True, **kwargs):
        check_pooling(pooling)

        # === Layers ===
        self.backbone = backbone
        # Embeddings never read the backbone's pooler: frozen, so training
        # the embedder leaves it as loaded (and Keras misses no gradient).
        backbone.pooler_dense.trainable = False
        self.pooling_layer = SentencePooling(
            pooling, normalize=normalize, name="pooling"
        )

        # === Functional Model ===
        inputs = keras_inputs()
        sequence = backbone(inputs)["sequence_output"]
        embeddings = self.pooling_layer(sequence, inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=embeddings, **kwargs)

        # === Config ===
        self.pooling = pooling
        self.normalize = normalize

    @property
    def hidden_dim(self):
        """The size of each embedding (the backbone's `hidden_dim`)."""
        return self.backbone.hidden_dim

    def encode(
        self,
        sentences,
        batch_size=32,
        normalize_embeddings=None,
        convert_to_numpy=True,
        show_progress_bar=None,
    ):
        """Embeddings of sentences: sentence-transformers' `encode`.

        Runs through the model's compiled function
        (`keras_bert.models.small_calls`): no `tf.data` pipeline, no
        callbacks, one trace for every batch size and length. More than
        `batch_size` sentences are embedded `batch_size` at a time,
        longest first, and returned in order. Needs the `preprocessor`.

        Args:
            sentences: str, or a list, 1-D array or tensor of str.
            batch_size: int. Sentences per call. Defaults to `32`.
            normalize_embeddings: bool or `None`. L2-normalise each
                embedding; `None` (the default): as the model does
                (`normalize`).
            convert_to_numpy: bool. A NumPy array (the default), or a
                `tf.Tensor` when `False`.
            show_progress_bar: bool or `None`. A progress bar over the
                batches; `None` (the default) or `False`: none.

        Returns:
            float32 `(num_sentences, hidden_dim)`; `(hidden_dim,)` for one
            str; `(0, hidden_dim)` for no sentences.

        Example:
        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "a", "good", "bad", "film", "book"]
        embedder = keras_bert.BertTextEmbedder(
            keras_bert.BertBackbone(
                vocabulary_size=len(vocabulary), num_layers=1, num_heads=2,
                hidden_dim=8, intermediate_dim=16, max_sequence_length=16,
            ),
            preprocessor=keras_bert.BertPreprocessor(
                keras_bert.BertTokenizer(vocabulary), sequence_length=16
            ),
        )
        embedder.encode("a good film").shape  # (8,)
        embedder.encode(["a good film", "a bad book"]).shape  # (2, 8)
        raw = embedder.encode(["a good film"], normalize_embeddings=False)
        ```
        """
        check_positive_int("batch_size", batch_size)
        if normalize_embeddings is None:
            normalize_embeddings = self.normalize
        if not isinstance(normalize_embeddings, bool):
            raise ValueError(
                "Received an invalid value for argument "
                "`normalize_embeddings`, expected True, False or None (the "
                f"model's own `normalize={self.normalize}`). Received: "
                f"normalize_embeddings={normalize_embeddings!r}"
            )
        if self.preprocessor is None:
            raise ValueError(
                "`BertTextEmbedder.encode` tokenizes sentences with the "
                "model's preprocessor, and the model has none. Build it with "
                "one (`preprocessor=keras_bert.BertPreprocessor(tokenizer)`"
                ", or set `model.preprocessor`), or pass ids to `predict`."
            )
        single = isinstance(sentences, (str, bytes))
        texts = _sentences(sentences)
        if not len(texts):
            embeddings = tf.zeros((0, self.hidden_dim), tf.float32)
        else:
            forward = None
            if normalize_embeddings != self.normalize:
                pooling = SentencePooling(
                    self.pooling, normalize=normalize_embeddings
                )

                def forward(inputs):
                    sequence = self.backbone(inputs, training=False)
                    return pooling(
                        sequence["sequence_output"], inputs["padding_mask"]
                    )

            chunks = -(-len(texts) // batch_size)
            embeddings = run_in_chunks(
                self,
                texts,
                batch_size,
                ("encode", normalize_embeddings),
                forward,
                keras.utils.Progbar(chunks) if show_progress_bar else None,
            )
        if single:
            embeddings = embeddings[0]
        return embeddings.numpy() if convert_to_numpy else embeddings

    def get_config(self):
        return {
            **super().get_config(),
            "pooling": self.pooling,
            "normalize": self.normalize,
        }


def _sentences(sentences):
    """`encode`'s sentences as a 1-D array of str (maybe empty), checked."""
    if isinstance(sentences, tuple):
        sentences = list(sentences)
    if tf.is_tensor(sentences):
        sentences = sentences.numpy()
    if isinstance(sentences, (list, np.ndarray)) and not len(sentences):
        return np.zeros((0,), object)
    return texts_of(sentences, "sentences")[0]
