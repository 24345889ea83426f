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

The deprecated layers (`Dropout`, `LayerNorm`, `HeadParallelBlock`) are
in `keras_bert/deprecations/layers.py`, the tables and the aliases here.
Importing `keras_bert` installs these aliases (`install`); nothing else
in the package imports this module (recipes read `flag_value`).
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.models.bert_backbone import BertBackbone

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
    warn_deprecated(
        f"{recipe}.py --{flag}={value}", f"--{flag}={renamed[value]}"
    )
    return renamed[value]


def _package_reader(name):
    """`keras_bert`'s `__getattr__`: `keras_bert.tasks`, the old package."""
    if f"keras_bert.{name}" != OLD_PACKAGE:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    return importlib.import_module(OLD_PACKAGE)


def warn_deprecated(old, new):
    """Warns that `old` is deprecated, naming `new` (at the caller of the
    function that calls this)."""
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
        warn_deprecated(f"{self.__name__}.{name}", f"{module}.{attribute}")
        return getattr(importlib.import_module(module), attribute)


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec):
        new = new_module_name(spec.name)
        warn_deprecated(spec.name, new)
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
        warn_deprecated(f"{module_name}.{name}", f"{module}.{attribute}")
        return getattr(importlib.import_module(module), attribute)

    return __getattr__


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
    # Imported here, registering them: they warn through this module.
    deprecated_layers = importlib.import_module(
        "keras_bert.deprecations.layers"
    )
    layers = importlib.import_module("keras_bert.layers")
    for name in ("Dropout", "LayerNorm", "HeadParallelBlock"):
        setattr(layers, name, getattr(deprecated_layers, name))
