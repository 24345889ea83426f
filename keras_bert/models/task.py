"""The base of every BERT task model: a `BertBackbone` plus a head.

A task model file holds the model only: inputs, layers, outputs, config,
compile defaults and docstring. What the subclasses share is here:
serialising the backbone with the model, restoring the compile settings
of a saved model, listing the backbone as one layer, the registry of task
classes the recipes' flags offer (`TASK_NAME`, `Task.by_name()`) and
`from_checkpoint` / `from_preset`, the façades that hand loading (with the
preprocessor the model gets) to `keras_bert.checkpoints`.

How a checkpoint format names a head's tensors, which `transformers` class
it is and what it adds to a `config.json` is declared beside the loaders,
in `keras_bert.checkpoints.heads` (one `register_checkpoint_head` call per
class that loads or saves checkpoints).

What a head serves is registered in `keras_bert.serving`
(`register_endpoints`); `recipes/export.py --task` offers the task names
that serve (`keras_bert.serving.servable_task_names()`).
"""

import inspect

import keras
import numpy as np
import tensorflow as tf

from keras_bert.keras_workarounds import list_layer_as_one_operation
from keras_bert.layers.initializers import clone_initializer
from keras_bert.models import text_inputs
from keras_bert.text.bert_preprocessor import BertPreprocessor
from keras_bert.training.gradient_accumulation import accumulating_train_step
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)


class Task(keras.Model):
    """Base of the models that put a head on a `BertBackbone`.

    Subclasses set `self.backbone`, build a functional model in `__init__`
    (`keras_bert.models.bert_backbone.keras_inputs()` gives the inputs) and
    override `compile` with task defaults. This class serialises the
    backbone (and the preprocessor) with the model, restores the compile
    settings (optimizer state included) when a saved `.keras` file is
    loaded, lists the backbone as one layer (`layers`, `summary()`) and
    registers the class.

    With a `preprocessor`, the methods a subclass names in `TEXT_METHODS`
    take raw strings as well as ids (see `fit`): a list, array or
    `tf.data.Dataset` of `str`, or a tuple `(texts_a, texts_b)` for
    sentence pairs. Ids (the backbone's dict) work as they always have.

    Class attributes a subclass sets:
        TASK_NAME: str. The head's name in the recipes' flags (e.g.
            `"classifier"`); `None` keeps the class out of them.
        TEXT_METHODS: tuple of str. Which of `"fit"`, `"evaluate"` and
            `"predict"` read raw text through the preprocessor (none by
            default: a head whose labels or outputs are not one row per
            text overrides `predict` itself).
        DEFAULT_SEQUENCE_LENGTH: int. Tokens per example of the
            preprocessor `from_preset` and `from_checkpoint` attach.
            Defaults to `128`.
    """

    TASK_NAME = None
    TEXT_METHODS = ()
    # A subclass whose inputs are more than the preprocessor's three sets
    # a method `(features, all_features) -> inputs` (see BertMaskedLM).
    _inputs_from_text = None
    # The recipes' defaults: 128 as glue.py, ner.py (its windows) and
    # keras-hub's GLUE examples; BertQuestionAnswerer sets 384, as
    # squad.py and Google's run_squad.py.
    DEFAULT_SEQUENCE_LENGTH = 128

    # Every task class, in definition order (keras_bert's own first).
    registry = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Task.registry.append(cls)

    def __init__(self, *args, preprocessor=None, **kwargs):
        if preprocessor is not None and not isinstance(
            preprocessor, BertPreprocessor
        ):
            raise ValueError(
                "Received an invalid value for argument `preprocessor`, "
                "expected a keras_bert.BertPreprocessor or None. Received: "
                f"preprocessor={preprocessor!r}"
            )
        super().__init__(*args, **kwargs)
        self._list_backbone_as_one_operation()
        # The `keras_bert.BertPreprocessor` that turns raw text into the
        # model's inputs, or `None` (the model then takes ids only).
        self.preprocessor = preprocessor

    @classmethod
    def by_name(cls):
        """`{TASK_NAME: class}` of the registered task classes."""
        return {task.TASK_NAME: task for task in cls.registry if task.TASK_NAME}

    @property
    def layers(self):
        """The model's layers, its backbone listed as one layer.

        A head built on `BertBackbone.outputs_at` (`BertClassifier`,
        `BertMaskedLM`) calls the backbone's own layers in its graph.
        Listed here as the backbone they belong to, as for a head that
        calls the backbone whole, they keep `get_layer("bert_backbone")`
        and the layout of `.keras` and `.weights.h5` files (which Keras
        writes by this list) as they were before `outputs_at`, so files
        written before still load (tests/models/test_weight_files.py).
        """
        layers = super().layers
        backbone = getattr(self, "backbone", None)
        if backbone is None or any(layer is backbone for layer in layers):
            return layers
        backbone_layers = {id(layer) for layer in backbone.layers}
        listed = []
        for layer in layers:
            if id(layer) not in backbone_layers:
                listed.append(layer)
            elif not any(seen is backbone for seen in listed):
                listed.append(backbone)
        return listed

    def _list_backbone_as_one_operation(self):
        """Shows the backbone as one entry in `summary()` and `plot_model`
        (see `keras_workarounds.list_layer_as_one_operation`)."""
        backbone = getattr(self, "backbone", None)
        if backbone is not None:
            list_layer_as_one_operation(
                self, backbone, backbone.transformer_layers
            )

    @classmethod
    def from_checkpoint(cls, path, **kwargs):
        """Builds the model from a checkpoint and loads its weights.

        The backbone always comes from the checkpoint, all-or-nothing. Each
        head group (a classifier, the masked-LM and next-sentence heads, a
        span or tagging head) is loaded when the checkpoint has it: a
        Hugging Face `BertFor...` head, or the one Google's
        `run_classifier.py` / `run_squad.py` write. A group the checkpoint
        lacks entirely is freshly initialised and named in a logged
        warning. What each format calls a head is declared in
        `keras_bert.checkpoints.heads`; see
        `keras_bert.checkpoints.load_checkpoint`.

        Head arguments the checkpoint holds may be omitted: `num_classes`
        when it has a classifier or token classification head (and then a
        Hugging Face `id2label` gives a `BertTokenClassifier` its
        `labels`); `dropout` defaults to the checkpoint's.

        The model's `preprocessor` is the checkpoint's tokenizer
        (`BertTokenizer.from_checkpoint(path)`: its vocabulary, and its
        casing as that reads it) in a `BertPreprocessor` of
        `DEFAULT_SEQUENCE_LENGTH` tokens, the recipes' defaults:

        | model                  | `sequence_length` | as                  |
        |------------------------|-------------------|---------------------|
        | `BertClassifier`       | 128               | `recipes/glue.py`   |
        | `BertMaskedLM`         | 128               | `pretrain.py`       |
        | `BertQuestionAnswerer` | 384               | `squad.py` (windows)|
        | `BertTokenClassifier`  | 128               | `ner.py` (windows)  |

        `sequence_length=` sets another length, `preprocessor=` gives your
        own, `preprocessor=None` attaches none. A checkpoint without a
        vocabulary gets none, and a logged warning says why. It is saved
        with the model (`.keras`).

        Args:
            path: str. A Hugging Face or Google BERT checkpoint directory, a
                Hugging Face Hub id, a trained preset name or a keras-hub
                preset (as `BertBackbone.from_checkpoint` takes).
            **kwargs: the head's constructor arguments (e.g.
                `num_classes`, `dropout`, `labels`), overrides of the
                backbone config (e.g. `dtype="mixed_bfloat16"`), and
                `sequence_length` or `preprocessor`.

        Example:
        ```python
        keras_bert.checkpoints.save_huggingface(
            keras_bert.BertBackbone.from_preset("bert_tiny"), None, "tiny_bert"
        )
        # No head in the directory: the heads start fresh.
        classifier = keras_bert.BertClassifier.from_checkpoint(
            "tiny_bert", num_classes=2
        )
        model = keras_bert.BertMaskedLM.from_checkpoint("tiny_bert")
        keras_bert.checkpoints.save_huggingface(classifier, None, "tiny_clf")
        # Now it has one: the number of classes comes from it.
        keras_bert.BertClassifier.from_checkpoint("tiny_clf").num_classes  # 2
        ```
        """
        from keras_bert.checkpoints import load_checkpoint

        return load_checkpoint(path, cls, **kwargs)

    @classmethod
    def from_preset(cls, name, load_weights=True, **kwargs):
        """Builds the model from a preset, with its preprocessor attached.

        keras-hub's `from_preset`, on every task model. `name` is:

        - a trained preset (`bert_base_en_uncased`, `all_minilm_l6_v2_en`,
          ...; README.md's table) or anything `from_checkpoint` takes: a
          Hugging Face Hub id, `hf://org/name[@revision]` (keras-hub
          presets hosted there too, `hf://keras/bert_base_en_uncased`), a
          Hugging Face, Google or keras-hub directory, a `kaggle://`
          handle. The model and its preprocessor are what
          `from_checkpoint(name, **kwargs)` gives (the sequence lengths
          are in its table). `load_weights=False` builds the same
          architecture with random weights and the same preprocessor,
          reading the config and vocabulary but not the weights.
        - an architecture-only preset (`bert_tiny` ... `bert_large`):
          random weights, and a preprocessor only when `vocabulary=` (a
          `vocab.txt` path or a list of tokens; the embedding table then
          fits it) is given, since such a name has none. `lowercase=`
          (default `True`) sets its casing.

        An unknown name fails naming the closest preset; a `.keras` file
        fails naming `keras.models.load_model`, which loads it.

        Args:
            name: str. A preset name, Hub id or checkpoint path.
            load_weights: bool. Load the checkpoint's weights. Defaults to
                `True`.
            **kwargs: what `from_checkpoint` takes (head arguments such as
                `num_classes`, backbone overrides, `sequence_length`,
                `preprocessor`); with an architecture-only name, also
                `vocabulary` and `lowercase`.

        Example:
        ```python
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

    # --- Training ------------------------------------------------------------

    def compile(self, *args, gradient_accumulation_steps=1, **kwargs):
        """`keras.Model.compile`, plus gradient accumulation.

        Subclasses fill in their `"auto"` defaults and call this.

        Args:
            *args, **kwargs: those of `keras.Model.compile`.
            gradient_accumulation_steps: int. Runs each training batch as
                this many micro-batches, one after the other, and updates
                once with their summed gradients: batches of `B * K` with
                `K` steps train as batches of `B * K` (the same weights,
                to float rounding, for every task model's loss, means over
                counted labels included) in the activation memory of
                batches of `B`. See
                `keras_bert.training.gradient_accumulation`.
                Defaults to `1` (the batch runs whole).

        Example:
        ```python
        backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
        classifier = keras_bert.BertClassifier(backbone, num_classes=2)
        # Batches of 64 in four micro-batches of 16.
        classifier.compile(gradient_accumulation_steps=4)
        ```
        """
        check_gradient_accumulation_steps(gradient_accumulation_steps)
        super().compile(*args, **kwargs)
        self.gradient_accumulation_steps = gradient_accumulation_steps
        if gradient_accumulation_steps > 1:
            # Saved with the compile settings, so a `.keras` file keeps it.
            self._compile_config.config["gradient_accumulation_steps"] = (
                gradient_accumulation_steps
            )

    def train_step(self, data):
        steps = getattr(self, "gradient_accumulation_steps", 1)
        if steps > 1:
            return accumulating_train_step(self, data, steps)
        return super().train_step(data)

    # --- Raw text ------------------------------------------------------------

    def fit(self, x=None, y=None, *args, seed=None, **kwargs):
        """Trains the model; with a preprocessor, on raw text too.

        Without raw text this is `keras.Model.fit`, unchanged. With a
        preprocessor attached (and `"fit"` in the class's `TEXT_METHODS`),
        `x` may be raw text:

        - a list or 1-D array of `str` (one text per example), or a tuple
          `(texts_a, texts_b)` of two such for sentence pairs, with labels
          `y` (and optionally `sample_weight`) as usual. Every text is
          tokenized once in a parallel `tf.data` map; each epoch is then
          shuffled (`shuffle=True`, the default) into batches of
          like-length examples, each cut to its longest row, as the GLUE
          recipe batches (`keras_bert.data.packed_batches`). Such a run
          covers `epochs - initial_epoch` whole epochs; `steps_per_epoch`
          is set for it. `validation_split` takes the last examples, as
          Keras does.
        - a `tf.data.Dataset` of text batches, or of `(texts, labels)`
          batches: tokenized in the pipeline (`dataset.map`), each batch
          cut to its longest row, in the dataset's own order.

        `validation_data` may hold raw text the same ways (`(texts,
        labels)`, or a dataset); it is read in order.

        Args:
            x: the backbone's ids dict (as `keras.Model.fit`), or raw text
                as above.
            y: labels, one per text (or pair).
            *args: `keras.Model.fit`'s other arguments, in its order.
            seed: int or `None`. Seed of the data order when `fit` batches
                raw text itself; `None` draws one from NumPy's global
                generator (which `keras.utils.set_random_seed` seeds).
                Only for raw text in lists or arrays.
            **kwargs: `keras.Model.fit`'s keyword arguments
                (`batch_size`, `epochs`, `validation_data`, ...).

        Returns:
            A `keras.callbacks.History`.

        Example:
        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "a", "good", "bad", "film", "book"]
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(vocabulary), sequence_length=16
        )
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(vocabulary), num_layers=1, num_heads=2,
            hidden_dim=8, intermediate_dim=16,
        )
        classifier = keras_bert.BertClassifier(
            backbone, num_classes=2, preprocessor=preprocessor
        )
        classifier.fit(
            ["a good film", "a bad book", "good", "bad film"], [1, 0, 1, 0],
            batch_size=2, epochs=2, verbose=0,
        )
        ```
        """
        if not text_inputs.is_text(x):
            if seed is not None:
                raise ValueError(
                    "Received an invalid value for argument `seed`: it "
                    "orders raw text that `fit` batches itself, and `x` "
                    "is not raw text. Received: seed={seed!r}; shuffle "
                    "ids with `keras.utils.set_random_seed` instead."
                )
            return super().fit(x, y, *args, **kwargs)
        self._check_text_method("fit", "x")
        arguments = _bind(super().fit, x, y, *args, **kwargs)
        validation = arguments.pop("validation_data")
        validation_batch_size = (
            arguments.pop("validation_batch_size") or arguments["batch_size"]
        )
        split = arguments.pop("validation_split")
        if isinstance(x, tf.data.Dataset):
            if seed is not None:
                raise ValueError(
                    "Received an invalid value for argument `seed`: a "
                    "`tf.data.Dataset` keeps its own order. Received: "
                    f"seed={seed!r}; shuffle the dataset instead."
                )
            if split:
                raise ValueError(
                    "`validation_split` needs texts in lists or arrays; "
                    "with a `tf.data.Dataset`, pass `validation_data`."
                )
            arguments["x"] = text_inputs.text_dataset(
                x, self.preprocessor, self._inputs_from_text
            )
        else:
            if arguments["steps_per_epoch"] is not None:
                raise ValueError(
                    "Received an invalid value for argument "
                    "`steps_per_epoch`: `fit` on texts in lists or arrays "
                    "trains whole epochs. Pass steps_per_epoch=None, or a "
                    "`tf.data.Dataset` of text batches."
                )
            x_train, y_train, weights = x, y, arguments["sample_weight"]
            if split:
                (x_train, y_train, weights), validation = _split_last(
                    (x, y, weights), split
                )
            arguments["x"], arguments["steps_per_epoch"] = (
                text_inputs.fit_dataset(
                    self.preprocessor,
                    self._inputs_from_text,
                    x_train,
                    y_train,
                    sample_weight=weights,
                    batch_size=arguments["batch_size"],
                    shuffle=arguments["shuffle"],
                    seed=seed,
                    initial_epoch=arguments["initial_epoch"],
                    epochs=arguments["epochs"],
                )
            )
            arguments["shuffle"] = False  # each epoch is shuffled already
        arguments.update(y=None, batch_size=None, sample_weight=None)
        arguments["validation_data"] = self._validation_dataset(
            validation, validation_batch_size
        )
        return super().fit(**arguments)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """Scores the model; with a preprocessor, on raw text too.

        Without raw text this is `keras.Model.evaluate`, unchanged. With a
        preprocessor (and `"evaluate"` in `TEXT_METHODS`), `x` may be raw
        text as `fit` takes it, read in order in batches cut to their
        longest row: texts, or a pair `(texts_a, texts_b)`, with labels
        `y`; or a `tf.data.Dataset` of `(texts, labels)` batches.

        Args:
            x: the ids dict, or raw text.
            y: labels, one per text (or pair).
            *args, **kwargs: `keras.Model.evaluate`'s other arguments.

        Example:
        ```python
        classifier.evaluate(["a good film", "a bad book"], [1, 0])
        ```
        """
        if not text_inputs.is_text(x):
            return super().evaluate(x, y, *args, **kwargs)
        self._check_text_method("evaluate", "x")
        arguments = _bind(super().evaluate, x, y, *args, **kwargs)
        arguments["x"] = text_inputs.inference_dataset(
            self.preprocessor,
            self._inputs_from_text,
            x,
            y,
            sample_weight=arguments["sample_weight"],
            batch_size=arguments["batch_size"],
        )
        arguments.update(y=None, batch_size=None, sample_weight=None)
        kwargs = arguments.pop("kwargs", {})
        return super().evaluate(**arguments, **kwargs)

    def predict(self, x, *args, **kwargs):
        """The model's outputs; with a preprocessor, for raw text too.

        Without raw text this is `keras.Model.predict`, unchanged. With a
        preprocessor (and `"predict"` in `TEXT_METHODS`), `x` may be
        texts, a pair `(texts_a, texts_b)` or a `tf.data.Dataset` of text
        batches; the outputs come in the order of the texts, as for ids.

        Args:
            x: the ids dict, or raw text.
            *args, **kwargs: `keras.Model.predict`'s other arguments
                (`batch_size`, `verbose`, ...).

        Example:
        ```python
        logits = classifier.predict(["a good book"])  # (1, num_classes)
        ```
        """
        if not text_inputs.is_text(x):
            return super().predict(x, *args, **kwargs)
        self._check_text_method("predict", "x")
        arguments = _bind(super().predict, x, *args, **kwargs)
        arguments["x"] = text_inputs.inference_dataset(
            self.preprocessor,
            self._inputs_from_text,
            x,
            batch_size=arguments["batch_size"],
        )
        arguments["batch_size"] = None
        return super().predict(**arguments)

    def _check_text_method(self, method, argument):
        name = type(self).__name__
        if method not in self.TEXT_METHODS:
            raise ValueError(
                f"`{name}.{method}` takes the backbone's ids dict "
                "(`token_ids`, `segment_ids`, `padding_mask`), not raw "
                f"text; received raw text for `{argument}`. Tokenize it "
                f"with a keras_bert.BertPreprocessor first."
            )
        if self.preprocessor is None:
            raise ValueError(
                f"`{name}.{method}` received raw text for `{argument}`, but "
                "the model has no preprocessor to tokenize it. Build the "
                f"model with one (`{name}(backbone, ..., preprocessor="
                "keras_bert.BertPreprocessor(tokenizer))`, or set "
                "`model.preprocessor`), or pass the ids dict "
                "(`token_ids`, `segment_ids`, `padding_mask`)."
            )

    def _validation_dataset(self, validation, batch_size):
        """`validation_data` with raw text turned into batches of ids."""
        if isinstance(validation, tf.data.Dataset):
            if not text_inputs.is_text(validation):
                return validation
            return text_inputs.text_dataset(
                validation,
                self.preprocessor,
                self._inputs_from_text,
                argument="validation_data",
            )
        if not (
            isinstance(validation, (tuple, list))
            and validation
            and text_inputs.is_text(validation[0])
        ):
            return validation
        if not 2 <= len(validation) <= 3:
            raise ValueError(
                "Received an invalid value for argument `validation_data`: "
                "expected `(texts, labels)` or `(texts, labels, "
                f"sample_weight)`; received {len(validation)} parts."
            )
        return text_inputs.inference_dataset(
            self.preprocessor,
            self._inputs_from_text,
            validation[0],
            validation[1],
            sample_weight=validation[2] if len(validation) == 3 else None,
            batch_size=batch_size,
        )

    # --- Serialisation -------------------------------------------------------

    def compile_from_config(self, config):
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.layers.serialize(self.backbone),
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.layers.serialize(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.layers.deserialize(config["backbone"])
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.layers.deserialize(
                config["preprocessor"]
            )
        return cls(**config)


def _bind(method, *args, **kwargs):
    """`{argument: value}` of a call of `method`, defaults included."""
    bound = inspect.signature(method).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _split_last(parts, fraction):
    """`(first, last)`: each of `parts` (or `None`) cut before its last
    `fraction`, as Keras' `validation_split` cuts arrays."""
    texts = text_inputs.texts_of(parts[0])
    num_texts = len(texts[0])
    cut = int(num_texts * (1 - fraction))
    if not 0 < cut < num_texts:
        raise ValueError(
            "Received an invalid value for argument `validation_split`: "
            f"{fraction} of {num_texts} texts leaves no text on one side. "
            "Pass a fraction strictly between 0 and 1 of enough texts."
        )

    def cut_at(value, start, end):
        if value is None:
            return None
        if isinstance(value, (tuple, dict)):  # a pair; labels per output
            return tf.nest.map_structure(
                lambda part: np.asarray(part)[start:end], value
            )
        return np.asarray(value)[start:end]

    x = texts if len(texts) == 2 else texts[0]
    first = tuple(cut_at(v, 0, cut) for v in (x, *parts[1:]))
    last = tuple(cut_at(v, cut, None) for v in (x, *parts[1:]))
    return first, tuple(v for v in last if v is not None)


def logits_dense(
    units, backbone, name, initializer=keras.initializers.TruncatedNormal
):
    """A head's output layer: a dense layer of float32 logits.

    Its kernel is drawn from `initializer(stddev=backbone.initializer_range)`
    (BERT's truncated normal unless the head says otherwise), its bias is 0,
    and it computes in float32 under any dtype policy, so logits and the
    loss stay float32 under mixed precision.

    Args:
        units: int. Number of logits.
        backbone: `keras_bert.BertBackbone`. Gives the initializer range.
        name: str. The layer's name (part of the weight layout).
        initializer: a Keras initializer class taking `stddev`.
    """
    return keras.layers.Dense(
        units,
        kernel_initializer=clone_initializer(
            initializer(stddev=backbone.initializer_range)
        ),
        dtype="float32",
        name=name,
    )
