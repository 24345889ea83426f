"""What every BERT task model implements: the task interface.

A task model is a `BertBackbone` plus a head. Everything outside the model
that depends on the head asks the model through this interface instead of
keeping a list of task classes:

- checkpoints (`keras_bert.checkpoints`) read and write the head's tensors
  under the names the class declares in `CHECKPOINT_HEADS` (Hugging Face
  layout) and `GOOGLE_NAMES` (original Google TF1 layout), build the model
  from a checkpoint with `config_from_checkpoint`, and write its Hugging
  Face `config.json` entries from `huggingface_config`;
- the recipes' flags that choose a head (`recipes/export.py --task`,
  `recipes/convert_checkpoint.py --model`) offer the `TASK_NAME` of every
  registered class (`Task.by_name()`; `--task` only those that serve,
  `keras_bert.serving.servable_task_names()`).

Subclasses register themselves when they are defined (`Task.registry`), so
a new head is one new class: nothing else lists the tasks. What a head
serves is registered in `keras_bert.serving` (`register_endpoints`).
"""

import keras


class Task(keras.Model):
    """Base of the models that put a head on a `BertBackbone`.

    Subclasses build a functional model in `__init__` and override
    `compile` with task defaults. This class serialises the backbone with
    the model, restores the compile settings (optimizer state included)
    when a saved `.keras` file is loaded, and defines the task interface.

    Class attributes a subclass sets:
        CHECKPOINT_HEADS: dict. Head group name → the Hugging Face name
            prefix of all of its tensors (e.g. `{"classifier":
            "classifier."}`). A group is loaded whole or, when a checkpoint
            has none of its tensors, left freshly initialised.
        GROUP_DESCRIPTIONS: dict. Head group name → how messages name it.
        GOOGLE_NAMES: dict. Variable name in an original Google checkpoint
            → Hugging Face name, for head tensors whose Google names do not
            follow the scope-to-dotted-name rule.
        HUGGINGFACE_ARCHITECTURE: str. `transformers` class of the model
            (`config.json` `architectures`).
        USES_POOLER: bool. Whether the head reads `pooled_output`. A model
            that does not (span and token heads) is saved without the
            pooler, as `transformers` saves it, and loads without one.
        TASK_NAME: str. The head's name in the recipes' flags (e.g.
            `"classifier"`); `None` keeps the class out of them.

    Methods a subclass implements: `head_weights`, and where it applies
    `config_from_checkpoint` and `huggingface_config`.
    """

    CHECKPOINT_HEADS = {}
    GROUP_DESCRIPTIONS = {}
    GOOGLE_NAMES = {}
    HUGGINGFACE_ARCHITECTURE = None
    USES_POOLER = True
    TASK_NAME = None

    # Every task class, in definition order (keras_bert's own first).
    registry = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Task.registry.append(cls)

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

    # --- Task interface ----------------------------------------------------

    def head_weights(self):
        """The head's weights under their Hugging Face names.

        Returns a dict from head group name (a key of `CHECKPOINT_HEADS`)
        to a dict from Hugging Face name to what holds the weights there: a
        `keras.layers.Dense` (`<name>.weight`, transposed, and
        `<name>.bias`), a LayerNorm (`<name>.weight` and `<name>.bias`) or
        a `keras.Variable` (`<name>` itself). Together with the backbone's
        weights these must cover every variable of the model once.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement head_weights()."
        )

    @classmethod
    def config_from_checkpoint(cls, checkpoint, backbone_config, **kwargs):
        """Constructor arguments (besides the backbone) for a checkpoint.

        Args:
            checkpoint: `keras_bert.checkpoints.Checkpoint`.
            backbone_config: dict. The backbone's arguments.
            **kwargs: the arguments the caller of `from_checkpoint` gave.

        Returns a dict of keyword arguments for `cls(backbone, **...)`.
        """
        return kwargs

    def huggingface_config(self):
        """Entries this model adds to a Hugging Face `config.json`."""
        return {"architectures": [self.HUGGINGFACE_ARCHITECTURE]}

    @classmethod
    def from_checkpoint(cls, path, **kwargs):
        """Builds the model from a checkpoint directory and loads it.

        The backbone always comes from the checkpoint; each head group is
        loaded when the checkpoint has it and freshly initialised (with a
        logged warning) otherwise. See
        `keras_bert.checkpoints.load_checkpoint`.

        Args:
            path: str. A Hugging Face or Google BERT checkpoint directory.
            **kwargs: the head's constructor arguments (e.g.
                `num_classes`) and overrides of the backbone config (e.g.
                `dropout=0.0`).
        """
        from keras_bert.checkpoints import load_checkpoint

        return load_checkpoint(path, cls, **kwargs)

    # --- Serialisation -------------------------------------------------------

    def compile_from_config(self, config):
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.layers.serialize(self.backbone),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.layers.deserialize(config["backbone"])
        return cls(**config)
