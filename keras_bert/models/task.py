"""The base of every BERT task model: a `BertBackbone` plus a head.

What the task models share: serialising the backbone (and preprocessor)
with the model, restoring the compile settings of a saved model, gradient
accumulation, listing the backbone as one layer, the registry of task
classes (`TASK_NAME`, `Task.by_name()`), raw text in `fit`, `evaluate`
and `predict` (`keras_bert.models.raw_text`), and `from_checkpoint` /
`from_preset`, the façades up to `keras_bert.checkpoints`. What a format
calls a head is in `keras_bert.checkpoints.heads`; what a head serves, in
`keras_bert.serving` (`register_endpoints`).
"""

import inspect

import keras

from keras_bert.keras_workarounds import build_before_tracing
from keras_bert.keras_workarounds import learning_rate_schedule
from keras_bert.keras_workarounds import list_layer_as_one_operation
from keras_bert.layers.initializers import clone_initializer
from keras_bert.models.loading import CheckpointLoading
from keras_bert.models.raw_text import RawTextMethods
from keras_bert.text.bert_preprocessor import BertPreprocessor
from keras_bert.training.cpu_backend import log_onednn_hint
from keras_bert.training.gradient_accumulation import accumulating_train_step
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)
from keras_bert.training.optimizers import training_defaults
from keras_bert.training.warmup_linear_decay import FitWarmupLinearDecay


class Task(CheckpointLoading, RawTextMethods, keras.Model):
    """Base of the models that put a head on a `BertBackbone`.

    Subclasses set `self.backbone`, build a functional model in `__init__`
    (`keras_bert.models.bert_backbone.keras_inputs()` gives the inputs) and
    override `compile` with task defaults; this class does the rest (see
    the module's docstring).

    With a `preprocessor`, the methods a subclass names in `TEXT_METHODS`
    take raw strings as well as ids (see `fit`): a list, array or
    `tf.data.Dataset` of `str`, or a tuple `(texts_a, texts_b)` for
    sentence pairs.

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
    # As glue.py and ner.py (BertQuestionAnswerer: 384, as squad.py).
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

        A head built on `BertBackbone.outputs_at` calls the backbone's own
        layers in its graph; listed as the backbone they belong to, they
        keep `get_layer("bert_backbone")` and the layout of `.keras` and
        `.weights.h5` files (which Keras writes by this list) that of a
        head calling the backbone whole (tests/models/test_weight_files.py).
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
        """The backbone as one entry in `summary()` and `plot_model`."""
        backbone = getattr(self, "backbone", None)
        if backbone is not None:
            list_layer_as_one_operation(
                self, backbone, backbone.transformer_layers
            )

    def compile(self, *args, gradient_accumulation_steps=1, **kwargs):
        """`keras.Model.compile`, plus gradient accumulation.

        Subclasses fill in their `"auto"` defaults and call this.

        Args:
            *args, **kwargs: those of `keras.Model.compile`.
            gradient_accumulation_steps: int. Runs each training batch as
                this many micro-batches, one after the other, and updates
                once with their summed gradients: batches of `B * K` train
                as such, in the activation memory of batches of `B` (see
                `keras_bert.training.gradient_accumulation`). Defaults to
                `1` (the batch runs whole).

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

    def auto_optimizer(self):
        """The optimizer of `compile(optimizer="auto")`: AdamW with the
        model's `keras_bert.training.TRAINING_DEFAULTS[TASK_NAME]`, its
        learning rate warmed up and decayed linearly to 0 over the updates
        of each `fit` (`FitWarmupLinearDecay`), peaking at the table's
        `lora_learning_rate` when the backbone has LoRA on.

        Example:
        ```python
        backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
        classifier = keras_bert.BertClassifier(backbone, num_classes=2)
        classifier.compile(optimizer=classifier.auto_optimizer())
        ```
        """
        return training_defaults(self.TASK_NAME).create_auto_optimizer()

    def fit(self, *args, **kwargs):
        """Trains the model: `RawTextMethods.fit` (ids, or raw text with a
        preprocessor; its docstring has the arguments). An optimizer on a
        `keras_bert.training.FitWarmupLinearDecay` (what
        `compile(optimizer="auto")` gives) warms up and decays over the
        updates of this `fit`, laid out anew on each call.

        Example (`classifier` as in `RawTextMethods.fit`'s):
        ```python
        classifier.compile()  # optimizer="auto"
        classifier.fit(["a good film", "a bad book"], [1, 0], verbose=0)
        ```
        """
        log_onednn_hint()  # once a process, on a CPU where it pays
        schedule = learning_rate_schedule(getattr(self, "optimizer", None))
        if isinstance(schedule, FitWarmupLinearDecay):
            seed = kwargs.pop("seed", None)
            arguments = inspect.signature(keras.Model.fit).bind(
                self, *args, **kwargs
            )
            arguments.apply_defaults()
            arguments = dict(arguments.arguments)
            del arguments["self"]
            extra = arguments.pop("kwargs", {})
            callbacks = arguments["callbacks"] or []
            arguments["callbacks"] = [*callbacks, schedule.callback()]
            return super().fit(**arguments, **extra, seed=seed)
        return super().fit(*args, **kwargs)

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Optimizer, loss and metrics built before `fit` traces its step,
        # so that it is traced once (`keras_workarounds`).
        if keras.backend.backend() != "tensorflow":
            return super()._maybe_symbolic_build(iterator, data_batch)
        build_before_tracing(self, iterator, data_batch)

    def train_step(self, data):
        steps = getattr(self, "gradient_accumulation_steps", 1)
        if steps > 1:
            return accumulating_train_step(self, data, steps)
        return super().train_step(data)

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
