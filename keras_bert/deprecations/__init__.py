"""Every deprecated name of keras_bert, in one place.

Old names keep working for a release, each with a `FutureWarning` naming
its replacement (`FutureWarning`, not `DeprecationWarning`, because
Python hides the latter outside `__main__` and the users of these names
are scripts). A name leaves this file, and the package, one release
after it arrived here.

- `keras_bert.tasks` (and every module under it) is now
  `keras_bert.fine_tuning`: "task" names the Keras models with a head
  (`keras_bert.models.Task`); the fine-tuning jobs live apart. Inside it
  `fine_tuning` became `runner`, each job folder's `fine_tuning` became
  `job`, `fine_tuning_task.FineTuningTask` became `job.FineTuningJob`,
  `task_model` became `starting_model`; `recipe_flags` moved to
  `keras_bert.cli`; `ner.FrozenFeaturesTagger` and
  `embeddings.PairEmbeddingModel` moved to `keras_bert.models`.
- Names that left a module still there (`MOVED_NAMES`): the LoRA target
  names moved from `keras_bert.models.bert_backbone` to
  `keras_bert.models.lora`, beside `enable_lora`; `trim_to_longest_row`
  from `keras_bert.serving.signatures` to `keras_bert.decoding`, below
  the models, whose `predict` runs the same text functions as the export;
  `keras_bert.fine_tuning.glue.dataset.preprocess_texts` is
  `keras_bert.data.pack_texts`, which every task's packing shares; a
  classifier's label and window checks moved beside its label modes and
  windows (`keras_bert.models.multi_hot_labels`, `.label_modes`,
  `.document_windowing`).
- Values of a recipe's flag that have a new name (`RENAMED_FLAG_VALUES`,
  read by the recipe through `flag_value`): `recipes/convert_checkpoint.py
  --model=question_answerer` is `--model=question_answering`, the
  `TASK_NAME` of `BertQuestionAnswerer`.
- The layers `Dropout` and `LayerNorm` are `HalfBitsDropout` and
  `ClosedFormLayerNorm`. They stay registered under their old names
  (`keras_bert>Dropout`, `keras_bert>LayerNorm`), so that `.keras` files
  and configs that name them still load, without a warning.
- The layer `HeadParallelBlock` (a block's inference as parallel streams,
  from its own copy of the weights) is the `streams` serving
  implementation: `keras_bert.serving.serving_copy(model, streams=N)`.
  It stays registered (`keras_bert>HeadParallelBlock`), computing with
  that implementation, so that `.keras` files that name it still load; it
  warns when made anew (`from_block`).
- How a served model runs is the serving plan's
  (`keras_bert.serving.plan`), on the serving floor: `serving_copy`,
  `quantized_copy`, `head_parallel_copy` and `QUANTIZATION_MODES` moved
  from `keras_bert.models` to `keras_bert.serving` (`MOVED_NAMES`), and
  the modules `keras_bert.models.serving_copy`, `.quantization`,
  `.head_parallel`, `keras_bert.layers.remapper_forms`, `.stream_layout`
  and `keras_bert.serving.bfloat16_cpu` to the serving floor
  (`RENAMED_MODULES`). The constructor argument `streams` of
  `TransformerEncoderBlock` and `BertBackbone` is gone: configs and
  `.keras` files saved with it load without it (`DROPPED_CONFIG_KEYS`),
  the same function; export with `streams=N` to serve in streams.

Importing `keras_bert` installs these aliases (`install`); nothing else
in the package imports this module (recipes read `flag_value`).
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

import keras

from keras_bert.layers.activations import validate_activation
from keras_bert.layers.block_implementations import BlockCall
from keras_bert.layers.block_implementations import is_quantized
from keras_bert.layers.block_implementations import layer_norm_class
from keras_bert.layers.closed_form_layer_norm import ClosedFormLayerNorm
from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.serving.runtime.block import stream_outputs
from keras_bert.serving.runtime.stream_layout import StreamLayout
from keras_bert.serving.runtime.stream_layout import check_streams
from keras_bert.serving.runtime.stream_layout import laid_out
from keras_bert.serving.runtime.stream_layout import stream_weight_shapes
from keras_bert.validation import check_positive_int

OLD_PACKAGE = "keras_bert.tasks"

# Old module → new module; a module under an old one not listed here moved
# with its parent (`keras_bert.tasks.glue.tsv` → `...fine_tuning.glue.tsv`).
RENAMED_MODULES = {
    "keras_bert.tasks": "keras_bert.fine_tuning",
    "keras_bert.tasks.fine_tuning": "keras_bert.fine_tuning.runner",
    "keras_bert.tasks.fine_tuning_task": "keras_bert.fine_tuning.job",
    "keras_bert.tasks.task_model": "keras_bert.fine_tuning.starting_model",
    "keras_bert.tasks.recipe_flags": "keras_bert.cli.recipe_flags",
    "keras_bert.tasks.glue.fine_tuning": "keras_bert.fine_tuning.glue.job",
    "keras_bert.tasks.squad.fine_tuning": "keras_bert.fine_tuning.squad.job",
    "keras_bert.tasks.ner.fine_tuning": "keras_bert.fine_tuning.ner.job",
    "keras_bert.tasks.embeddings.fine_tuning": (
        "keras_bert.fine_tuning.embeddings.job"
    ),
    "keras_bert.tasks.ner.frozen_features_tagger": (
        "keras_bert.models.frozen_features_tagger"
    ),
    "keras_bert.tasks.embeddings.pair_embedding_model": (
        "keras_bert.models.pair_embedding_model"
    ),
    # Serving moved to its floor (these old modules are not packages).
    "keras_bert.models.serving_copy": "keras_bert.serving.served_copy",
    "keras_bert.models.quantization": "keras_bert.serving.quantization",
    "keras_bert.models.head_parallel": "keras_bert.serving.head_parallel",
    "keras_bert.layers.remapper_forms": (
        "keras_bert.serving.runtime.remapper_forms"
    ),
    "keras_bert.layers.stream_layout": (
        "keras_bert.serving.runtime.stream_layout"
    ),
    "keras_bert.serving.bfloat16_cpu": "keras_bert.serving.cpu",
}
# (old module, old name) → (new module, new name), for names that left
# their module or were renamed.
RENAMED_NAMES = {
    ("keras_bert.tasks", "FineTuningTask"): (
        "keras_bert.fine_tuning",
        "FineTuningJob",
    ),
    ("keras_bert.tasks", "recipe_flags"): ("keras_bert.cli", "recipe_flags"),
    ("keras_bert.tasks.fine_tuning_task", "FineTuningTask"): (
        "keras_bert.fine_tuning.job",
        "FineTuningJob",
    ),
    ("keras_bert.tasks.ner", "FrozenFeaturesTagger"): (
        "keras_bert.models",
        "FrozenFeaturesTagger",
    ),
    ("keras_bert.tasks.embeddings", "PairEmbeddingModel"): (
        "keras_bert.models",
        "PairEmbeddingModel",
    ),
}

# (module, name) → (new module, new name), for names that left a module
# that is still there; the old module reads them through `__getattr__`.
MOVED_NAMES = {
    ("keras_bert.models.bert_backbone", "LORA_TARGET_LAYER_NAMES"): (
        "keras_bert.models.lora",
        "LORA_TARGET_LAYER_NAMES",
    ),
    ("keras_bert.models.bert_backbone", "DEFAULT_LORA_TARGET_LAYER_NAMES"): (
        "keras_bert.models.lora",
        "DEFAULT_LORA_TARGET_LAYER_NAMES",
    ),
    ("keras_bert.serving.signatures", "trim_to_longest_row"): (
        "keras_bert.decoding.text_functions",
        "trim_to_longest_row",
    ),
    ("keras_bert.fine_tuning.glue.dataset", "preprocess_texts"): (
        "keras_bert.data.packed_batches",
        "pack_texts",
    ),
    ("keras_bert.models", "serving_copy"): (
        "keras_bert.serving",
        "serving_copy",
    ),
    ("keras_bert.models", "quantized_copy"): (
        "keras_bert.serving",
        "quantized_copy",
    ),
    ("keras_bert.models", "head_parallel_copy"): (
        "keras_bert.serving",
        "head_parallel_copy",
    ),
    ("keras_bert.models", "QUANTIZATION_MODES"): (
        "keras_bert.serving",
        "QUANTIZATION_MODES",
    ),
    ("keras_bert.models.labels", "multi_hot_labels"): (
        "keras_bert.models.multi_hot_labels",
        "multi_hot_labels",
    ),
    ("keras_bert.models.labels", "check_label_names"): (
        "keras_bert.models.label_modes",
        "check_label_names",
    ),
    ("keras_bert.models.bert_classifier", "check_document_windows"): (
        "keras_bert.models.document_windowing",
        "check_document_windows",
    ),
}

# Constructor arguments that left a class: a config (a `.keras` file)
# saved with one loads without it, computing the same function (passed to
# the constructor, Keras refuses it as an unrecognized argument).
DROPPED_CONFIG_KEYS = {
    # How a model serves is the export's plan now (`streams=N` there).
    TransformerEncoderBlock: ("streams",),
    BertBackbone: ("streams",),
}

# (recipe, flag) → {old value: new value}, for the values of a recipe's
# flag that have a new name; the recipe accepts both (`flag_value`).
RENAMED_FLAG_VALUES = {
    ("convert_checkpoint", "model"): {
        "question_answerer": "question_answering",
    },
}


def new_module_name(old):
    """The module that replaced the deprecated module `old`."""
    if old in RENAMED_MODULES:
        return RENAMED_MODULES[old]
    parent, _, child = old.rpartition(".")
    return f"{new_module_name(parent)}.{child}"


def flag_value(recipe, flag, value):
    """`value` of `recipes/<recipe>.py --<flag>`, under its new name.

    An old name (`RENAMED_FLAG_VALUES`) warns and gives the new one; any
    other value is returned as it is.
    """
    renamed = RENAMED_FLAG_VALUES.get((recipe, flag), {})
    if value not in renamed:
        return value
    _warn(f"{recipe}.py --{flag}={value}", f"--{flag}={renamed[value]}")
    return renamed[value]


def _package_reader(name):
    """`keras_bert`'s `__getattr__`: `keras_bert.tasks`, the old package."""
    if f"keras_bert.{name}" != OLD_PACKAGE:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    return importlib.import_module(OLD_PACKAGE)


def _warn(old, new):
    warnings.warn(
        f"`{old}` is deprecated and will be removed in the next release; "
        f"use `{new}`.",
        FutureWarning,
        stacklevel=3,
    )


class _AliasModule(types.ModuleType):
    """A deprecated module: every attribute read from its replacement."""

    def __init__(self, old, new):
        super().__init__(old)
        self.__path__ = []  # a package, so its old submodules import too
        self._new = new

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        module, attribute = RENAMED_NAMES.get(
            (self.__name__, name), (self._new, name)
        )
        _warn(f"{self.__name__}.{name}", f"{module}.{attribute}")
        return getattr(importlib.import_module(module), attribute)


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec):
        new = new_module_name(spec.name)
        _warn(spec.name, new)
        importlib.import_module(new)  # fails, as before, if it is gone
        return _AliasModule(spec.name, new)

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds `keras_bert.tasks` and the modules under it, and the other
    old modules of `RENAMED_MODULES`, nothing else."""

    def find_spec(self, fullname, path=None, target=None):
        if (
            fullname != OLD_PACKAGE
            and not fullname.startswith(OLD_PACKAGE + ".")
            and fullname not in RENAMED_MODULES
        ):
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(), is_package=True
        )


def _moved_names_reader(module_name):
    """A module's `__getattr__` that reads its `MOVED_NAMES`, warning."""

    def __getattr__(name):
        if (module_name, name) not in MOVED_NAMES:
            raise AttributeError(
                f"module {module_name!r} has no attribute {name!r}"
            )
        module, attribute = MOVED_NAMES[(module_name, name)]
        _warn(f"{module_name}.{name}", f"{module}.{attribute}")
        return getattr(importlib.import_module(module), attribute)

    return __getattr__


@keras.saving.register_keras_serializable(package="keras_bert")
class Dropout(HalfBitsDropout):
    """Deprecated: `keras_bert.layers.HalfBitsDropout`'s old name.

    Registered as `keras_bert>Dropout`, so that `.keras` files and configs
    saved with it still load. Use `HalfBitsDropout`.
    """


@keras.saving.register_keras_serializable(package="keras_bert")
class LayerNorm(ClosedFormLayerNorm):
    """Deprecated: `keras_bert.layers.ClosedFormLayerNorm`'s old name.

    Registered as `keras_bert>LayerNorm`, so that `.keras` files and
    configs saved with it still load. Use `ClosedFormLayerNorm`.
    """


@keras.saving.register_keras_serializable(package="keras_bert")
class HeadParallelBlock(keras.layers.Layer):
    """Deprecated: a `TransformerEncoderBlock`'s inference as streams, from
    its own copy of the block's weights laid out per stream.

    Use `keras_bert.serving.serving_copy(model, streams=N)` (the `streams`
    serving implementation, which this layer runs). Kept, registered as
    `keras_bert>HeadParallelBlock`, so that `.keras` files naming it load.

    Args:
        num_heads: int. Number of attention heads.
        intermediate_dim: int. Width of the feed-forward layer.
        streams: int. Number of streams, from 1 to `num_heads`.
            Defaults to `2`.
        activation: str. `"gelu"` or `"gelu_approximate"`, as the block.
        layer_norm_epsilon: float. Defaults to `1e-12`.
        optimizations: tuple of str, the block's (it picks the LayerNorm
            layer class). Defaults to `None`: all.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        streams=2,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        optimizations=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_heads", num_heads)
        check_positive_int("intermediate_dim", intermediate_dim)
        check_streams(streams, num_heads)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.streams = streams
        self.activation = validate_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.optimizations = validate_optimizations(optimizations)
        LayerNorm = layer_norm_class(self.optimizations)
        for name in ("attention_layer_norm", "output_layer_norm"):
            layer_norm = LayerNorm(
                epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name=name
            )
            setattr(self, name, layer_norm)

    def build(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        self.hidden_dim = inputs_shape[-1]
        self.head_dim = self.hidden_dim // self.num_heads
        layout = StreamLayout(
            self.num_heads, self.intermediate_dim, self.streams, [], None, None
        )
        self.head_slices = layout.head_slices
        self.unit_slices = layout.unit_slices
        shapes = stream_weight_shapes(
            self.hidden_dim, self.head_dim, self.head_slices, self.unit_slices
        )
        self.stream_weights = [
            {
                name: self.add_weight(
                    shape=shape,
                    initializer="zeros",
                    trainable=False,
                    name=f"stream_{i}_{name}",
                )
                for name, shape in stream.items()
            }
            for i, stream in enumerate(shapes)
        ]
        for name in ("attention_output_bias", "output_bias"):
            bias = self.add_weight(
                shape=(self.hidden_dim,),
                initializer="zeros",
                trainable=False,
                name=name,
            )
            setattr(self, name, bias)
        self.attention_layer_norm.build(inputs_shape)
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    @classmethod
    def from_block(cls, block, streams=2):
        """A `HeadParallelBlock` holding a built float block's weights."""
        _warn(
            "keras_bert.layers.HeadParallelBlock",
            "keras_bert.serving.serving_copy(model, streams=N)",
        )
        if not block.built or is_quantized(block):
            raise ValueError(
                "HeadParallelBlock.from_block needs a built block with float "
                "weights (call it once, or build its model; int8 weights "
                f"cannot be split). Received block {block.name!r}."
            )
        layer = cls(
            num_heads=block.num_heads,
            intermediate_dim=block.intermediate_dim,
            streams=streams,
            activation=block.activation,
            layer_norm_epsilon=block.layer_norm_epsilon,
            optimizations=block.optimizations,
            dtype=block.dtype_policy,
            name=f"{block.name}_streams",
        )
        layer.build((None, None, block.hidden_dim))
        values = laid_out(block, layer.head_slices, layer.unit_slices)
        for variables, stream in zip(layer.stream_weights, values):
            for name, value in stream.items():
                variables[name].assign(value)
        layer.attention_output_bias.assign(block.attention_output_dense.bias)
        layer.output_bias.assign(block.output_dense.bias)
        layer.attention_layer_norm.set_weights(
            block.attention_layer_norm.get_weights()
        )
        layer.output_layer_norm.set_weights(
            block.output_layer_norm.get_weights()
        )
        return layer

    def call(self, inputs, padding_mask=None, query_positions=None):
        if query_positions is not None:
            query_positions = keras.ops.cast(query_positions, "int32")
        layout = StreamLayout(
            self.num_heads,
            self.intermediate_dim,
            self.streams,
            self.stream_weights,
            self.attention_output_bias,
            self.output_bias,
        )
        call = BlockCall(
            inputs, padding_mask, query_positions, False, False, False, False
        )
        return stream_outputs(self, layout, call)[0]

    def compute_output_shape(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        if query_positions_shape is None:
            return inputs_shape
        return tuple(query_positions_shape) + (inputs_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "streams": self.streams,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "optimizations": list(self.optimizations),
            }
        )
        return config


def _dropping_keys(from_config, keys):
    """A `from_config` classmethod that drops `keys` from the config, then
    runs `from_config`."""

    def dropping(cls, config):
        config = {k: v for k, v in config.items() if k not in keys}
        return from_config(cls, config)

    dropping._drops_keys = True
    return classmethod(dropping)


def install():
    """Makes the deprecated names importable (called by `keras_bert`)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        # First: a stale `keras_bert/tasks/__pycache__` would otherwise
        # import as an empty namespace package.
        sys.meta_path.insert(0, _AliasFinder())
    sys.modules["keras_bert"].__getattr__ = _package_reader
    for module_name in {module for module, _ in MOVED_NAMES}:
        module = importlib.import_module(module_name)
        module.__getattr__ = _moved_names_reader(module_name)
    for cls, keys in DROPPED_CONFIG_KEYS.items():
        if not getattr(cls.from_config, "_drops_keys", False):
            cls.from_config = _dropping_keys(cls.from_config.__func__, keys)
    layers = importlib.import_module("keras_bert.layers")
    layers.Dropout = Dropout
    layers.LayerNorm = LayerNorm
    layers.HeadParallelBlock = HeadParallelBlock
