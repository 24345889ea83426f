"""`from_checkpoint` and `from_preset` on every model class.

The façades up to `keras_bert.checkpoints` (imported inside each method,
the one import a model makes above its floor), as keras-hub's
`from_preset`: users find loading on the class they load. `BertBackbone`
and `keras_bert.models.Task` mix this in.
"""


class CheckpointLoading:
    """`from_checkpoint` and `from_preset`, for a backbone or a task model."""

    @classmethod
    def from_checkpoint(cls, path, **kwargs):
        """Builds the model from a checkpoint and loads its weights.

        `path` is a Hugging Face directory (`config.json` with
        `model.safetensors` or `pytorch_model.bin`), an original Google one
        (`bert_config.json`, `bert_model.ckpt.*`), a Hub id
        (`google-bert/bert-base-uncased`, `hf://org/name@revision`,
        fetched through `huggingface_hub`'s cache), a trained preset name,
        or a keras-hub preset (a directory or `kaggle://` handle, loaded
        with the tanh GELU keras-hub runs). The architecture comes from the
        config; the backbone's weights are loaded all-or-nothing (see
        `keras_bert.checkpoints.load_checkpoint`).

        A task model's head groups (classifier, masked-LM and
        next-sentence, span, tagging) are loaded where the checkpoint has
        them (a Hugging Face `BertFor...` head, or Google's
        `run_classifier.py` / `run_squad.py` one), else freshly
        initialised and named in a logged warning. Head arguments the
        checkpoint holds may be omitted: `num_classes` when it has a
        classifier or tagging head (a Hugging Face `id2label` then gives a
        `BertTokenClassifier` its `labels`); `dropout` defaults to the
        checkpoint's. Its `preprocessor` is the checkpoint's tokenizer
        (vocabulary and casing) in a `BertPreprocessor` of the class's
        `DEFAULT_SEQUENCE_LENGTH` tokens (128; 384 for
        `BertQuestionAnswerer`), saved with the model; `sequence_length=`
        sets another length, `preprocessor=` gives your own,
        `preprocessor=None` attaches none. A checkpoint without a
        vocabulary (`vocab.txt`, or the WordPiece model of a
        `tokenizer.json`) gets none, and a logged warning says why. A backbone
        takes token ids and has no preprocessor.

        Args:
            path: str. The checkpoint directory, Hub id or preset.
            **kwargs: overrides of the backbone config (e.g.
                `dropout=0.0`, `dtype="mixed_bfloat16"`); for a task model
                also the head's constructor arguments (`num_classes`,
                `labels`, ...) and `sequence_length` or `preprocessor`.

        Example:
        ```python
        keras_bert.checkpoints.save_huggingface(
            keras_bert.BertBackbone.from_preset("bert_tiny"), None, "tiny_bert"
        )
        backbone = keras_bert.BertBackbone.from_checkpoint("tiny_bert")
        # No head in the directory: the heads start fresh.
        classifier = keras_bert.BertClassifier.from_checkpoint(
            "tiny_bert", num_classes=2
        )
        keras_bert.checkpoints.save_huggingface(classifier, None, "tiny_clf")
        # Now it has one: the number of classes comes from it.
        keras_bert.BertClassifier.from_checkpoint("tiny_clf").num_classes  # 2
        ```
        """
        from keras_bert.checkpoints import load_checkpoint

        return load_checkpoint(path, cls, **kwargs)

    @classmethod
    def from_preset(cls, name, load_weights=True, **kwargs):
        """Builds a preset: random weights, or a trained checkpoint's.

        keras-hub's `from_preset`. `name` is:

        - a trained preset (`bert_base_en_uncased`, `all_minilm_l6_v2_en`,
          ...; README.md's table) or anything `from_checkpoint` takes: the
          model (and a task model's preprocessor) that
          `from_checkpoint(name, **kwargs)` gives. `load_weights=False`
          builds the same with random weights, reading the config and
          vocabulary but not the weights.
        - an architecture (`bert_tiny` ... `bert_large`,
          `keras_bert.models.presets`): random weights, vocabulary 30522.
          A task model gets a preprocessor only with `vocabulary=` (a
          `vocab.txt` path or a list of tokens, which the embedding table
          then fits; `lowercase=`, default `True`, sets its casing).

        An unknown name fails naming the closest preset; a `.keras` file
        fails naming `keras.models.load_model`, which loads it.

        Args:
            name: str. A preset name, Hub id or checkpoint path.
            load_weights: bool. Load the checkpoint's weights (an
                architecture has none). Defaults to `True`.
            **kwargs: what `from_checkpoint` takes; for an architecture,
                overrides of its config (e.g. `dropout=0.0`) and, for a
                task model, `vocabulary` and `lowercase`.

        Example:
        ```python
        backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
        backbone.count_params()  # 4385920
        classifier = keras_bert.BertClassifier.from_preset(
            "bert_tiny", num_classes=2
        )
        classifier.preprocessor  # None: an architecture has no vocabulary
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "movie"]
        answerer = keras_bert.BertQuestionAnswerer.from_preset(
            "bert_tiny", vocabulary=vocabulary
        )
        answerer.preprocessor.sequence_length  # 384
        answerer.backbone.vocabulary_size  # 6
        ```
        """
        from keras_bert.checkpoints import load_preset

        return load_preset(name, cls, load_weights, **kwargs)
