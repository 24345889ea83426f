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

import keras

from keras_bert.keras_workarounds import list_layer_as_one_operation
from keras_bert.layers.initializers import clone_initializer
from keras_bert.training.gradient_accumulation import accumulating_train_step
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)


class Task(keras.Model):
    """Base of the models that put a head on a `BertBackbone`.

    Subclasses set `self.backbone`, build a functional model in `__init__`
    (`keras_bert.models.bert_backbone.keras_inputs()` gives the inputs) and
    override `compile` with task defaults. This class serialises the
    backbone with the model, restores the compile settings (optimizer state
    included) when a saved `.keras` file is loaded, lists the backbone as
    one layer (`layers`, `summary()`) and registers the class.

    Class attributes a subclass sets:
        TASK_NAME: str. The head's name in the recipes' flags (e.g.
            `"classifier"`); `None` keeps the class out of them.
        DEFAULT_SEQUENCE_LENGTH: int. Tokens per example of the
            preprocessor `from_preset` and `from_checkpoint` attach.
            Defaults to `128`.
    """

    TASK_NAME = None
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
