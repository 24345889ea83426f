"""The package's import structure: floors, one façade, no cycles.

keras_bert is built in floors. A module may import from its own floor and
the floors below it, never from a floor above:

0. Utilities every part uses: file access (`files`), argument checks
   (`validation`), the guarded workarounds for Keras internals
   (`keras_workarounds`), the version.
1. Building blocks that know no model: Keras layers (`layers`), text
   processing (`text`), pre-training data (`data`).
2. Training machinery: optimizers, losses, metrics, strategies, callbacks
   (`training`); and decoding, the raw-text functions a model is called
   in, which know no model class (`decoding`: tokenizing, windows, the
   model passed in, answers, entities, fill-mask), so that a task model's
   `predict` and its SavedModel import them downward and answer alike.
3. Models: the backbone and the task models built from layers (`models`).
4. What is done with a model: reading and writing checkpoint formats
   (`checkpoints`), exporting it for serving (`serving`), and distilling
   it into a smaller student (`distillation`).
5. Fine-tuning jobs: a job's data, metrics, outputs and the shared
   runner (`fine_tuning`).
6. What the command-line recipes share (`cli`), and the deprecated names
   (`deprecations`), which alias every floor.

Recipes and benchmarks stand on top and may import anything.

One façade goes up, imported inside the method that is the façade:
`from_checkpoint` and `from_preset` on a model or the tokenizer may import
`checkpoints`, as keras-hub's `from_preset` does, so that users find
loading on the class they load.

How an export runs is a serving plan, on the serving floor: the layers and
the models know no serving variant, so neither names one
(`SERVING_VARIANT_NAMES`: streams, the matmul dtype, the former serving
trace, int8 ranges); a served block reads one attribute, `served_call`.

Folders also must not import each other in a loop, even on one floor: a
change to one folder would otherwise ripple through the loop. And no
module imports another module's private (underscored) name.

The checks are functions of the parsed modules (`upward_imports`,
`private_imports`, `unknown_folders`, `folder_graph`, `folder_cycles`),
so `test_the_checks_catch_*` feed them made-up modules that break each
rule. `python -m tests.test_layering` prints the package's folder import
graph, every import that goes up a floor (façades listed apart) and the
folder cycles.
"""

import ast
import os
import sys

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "keras_bert")
# Folder (or top-level module) → floor.
FLOORS = {
    "files": 0,
    "validation": 0,
    "keras_workarounds": 0,
    "version": 0,
    "layers": 1,
    "text": 1,
    "data": 1,
    "training": 2,
    "decoding": 2,
    "models": 3,
    "checkpoints": 4,
    "serving": 4,
    "distillation": 4,
    "fine_tuning": 5,
    "cli": 6,
    "deprecations": 6,
}
# Function name → the higher floor it may import, inside the function.
FACADES = {
    "from_checkpoint": "checkpoints",
    "from_preset": "checkpoints",
}


class Module:
    """One parsed module: its folder (the first part of its path under
    the package), its path relative to the package and its AST."""

    def __init__(self, relative, source):
        self.relative = relative
        self.folder = relative.split("/")[0].removesuffix(".py")
        self.source = source
        self.tree = ast.parse(source, relative)

    def __repr__(self):
        return self.relative


def package_modules(package=PACKAGE):
    """Every module of the package but its top-level `__init__.py` (which
    re-exports everything), as a `Module`."""
    modules = []
    for root, _, names in os.walk(package):
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            relative = os.path.relpath(path, package).replace(os.sep, "/")
            if relative == "__init__.py":
                continue
            with open(path, encoding="utf-8") as file:
                modules.append(Module(relative, file.read()))
    return sorted(modules, key=lambda module: module.relative)


def imports(module):
    """`(imported keras_bert module, imported names, enclosing function)`
    of each keras_bert import in `module`, relative imports resolved; the
    function is the outermost one the import sits in (`None`: module
    scope)."""
    package = ["keras_bert", *module.relative.split("/")[:-1]]
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, function or child.name)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name, (), function))
            elif isinstance(child, ast.ImportFrom):
                names = tuple(alias.name for alias in child.names)
                base = child.module or ""
                if child.level:  # from . import x, from ..y import z
                    parent = package[: len(package) - child.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                if base == "keras_bert":
                    for name in names:
                        found.append((f"keras_bert.{name}", (), function))
                else:
                    found.append((base, names, function))
            visit(child, function)

    visit(module.tree, None)
    return [
        (name, names, function)
        for name, names, function in found
        if name == "keras_bert" or name.startswith("keras_bert.")
    ]


def _target(imported):
    """The folder (or top-level module) an imported name lives in."""
    parts = imported.split(".")
    return parts[1] if len(parts) > 1 else None


def is_facade(function, target, facades=None):
    facades = FACADES if facades is None else facades
    return function in facades and facades[function] == target


def unknown_folders(modules, floors=None):
    """`relative: folder` for each module that lives in, or imports from,
    a folder with no floor."""
    floors = FLOORS if floors is None else floors
    unknown = []
    for module in modules:
        if module.folder not in floors:
            unknown.append(f"{module.relative}: {module.folder}")
        for imported, _, _ in imports(module):
            target = _target(imported)
            if target is not None and target not in floors:
                unknown.append(f"{module.relative}: {imported}")
    return unknown


def upward_imports(modules, floors=None, facades=None):
    """`(upward, facade)`: two lists of `relative: imported (in function)`
    for the imports of a higher floor — those outside a façade, and the
    façades' own. Folders without a floor are left to `unknown_folders`."""
    floors = FLOORS if floors is None else floors
    upward, facade = [], []
    for module in modules:
        for imported, _, function in imports(module):
            target = _target(imported)
            if module.folder not in floors or target not in floors:
                continue
            if floors[target] <= floors[module.folder]:
                continue
            line = (
                f"{module.relative}: {imported} "
                f"(in {function or 'module scope'})"
            )
            if is_facade(function, target, facades):
                facade.append(line)
            else:
                upward.append(line)
    return upward, facade


def private_imports(modules):
    """`relative: module.name` for each underscored name imported from
    another module (dunder names aside)."""
    return [
        f"{module.relative}: {imported}.{name}"
        for module in modules
        for imported, names, _ in imports(module)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]


# Words of the serving plan that the floors below `serving` never name.
SERVING_VARIANT_NAMES = (
    "streams",
    "matmul_dtype",
    "serving_trace",
    "int8_ranges",
)
# The floors that know no serving variant.
NO_SERVING_VARIANTS = ("layers", "models")


def serving_variant_names(modules):
    """`"path: name"` for each serving variant name (`SERVING_VARIANT_NAMES`,
    as a word, in code or text) a module of `NO_SERVING_VARIANTS` holds."""
    import re

    found = []
    for module in modules:
        if module.folder not in NO_SERVING_VARIANTS:
            continue
        for name in SERVING_VARIANT_NAMES:
            if re.search(rf"\b{name}\b", module.source):
                found.append(f"{module.relative}: {name}")
    return found


def folder_graph(modules, facades=None):
    """`{folder: {folders it imports}}`, façade imports left out (they go
    up by design, inside a method)."""
    graph = {}
    for module in modules:
        for imported, _, function in imports(module):
            target = _target(imported)
            if target is None or target == module.folder:
                continue
            if is_facade(function, target, facades):
                continue
            graph.setdefault(module.folder, set()).add(target)
    return graph


def folder_cycles(graph):
    """Each loop of `graph` once, as `"a -> b -> a"`, from its smallest
    folder."""
    cycles = []

    def walk(node, path):
        for target in sorted(graph.get(node, ())):
            if target == path[0]:
                cycles.append(" -> ".join(path + [target]))
            elif target not in path and target > path[0]:
                walk(target, path + [target])

    for start in sorted(graph):
        walk(start, [start])
    return cycles


MODULES = package_modules()


def test_the_package_is_read():
    folders = {module.folder for module in MODULES}
    assert {"layers", "models", "serving", "training"} <= folders
    assert sum(len(imports(module)) for module in MODULES) > 100


def test_every_folder_has_a_floor():
    assert unknown_folders(MODULES) == []


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_imports_go_down_the_floors(module):
    upward, _ = upward_imports([module])
    assert upward == [], (
        f"keras_bert/{module.relative} (floor {FLOORS[module.folder]}, "
        f"{module.folder}) imports from a higher floor: {upward}. Move the "
        "code to the floor it belongs to, or have the caller pass it in."
    )


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_no_private_names_are_imported_from_other_modules(module):
    private = private_imports([module])
    assert private == [], (
        f"keras_bert/{module.relative} imports private names: {private}. "
        "Make the name public where it is defined, or keep its use in that "
        "module."
    )


def test_layers_and_models_name_no_serving_variant():
    found = serving_variant_names(MODULES)
    assert found == [], (
        f"Serving variants named below the serving floor: {found}. How an "
        "export runs is the serving plan's (keras_bert.serving.plan), applied "
        "by keras_bert.serving.served_copy through a block's `served_call`."
    )


def test_the_checks_catch_a_serving_variant_in_a_layer():
    modules = _made_up(
        layers__block="self.streams = streams\n",
        models__backbone="# matmul_dtype in a comment counts too\n",
        serving__plan="streams = 2\n",  # its own floor
        layers__other="upstreams = 1\n",  # not the word
    )
    assert serving_variant_names(modules) == [
        "layers/block.py: streams",
        "models/backbone.py: matmul_dtype",
    ]


def test_no_import_cycles_between_folders():
    """The façades aside (they go up by design, inside a method)."""
    cycles = folder_cycles(folder_graph(MODULES))
    assert cycles == [], f"Folders that import each other in a loop: {cycles}"


# --- The checks themselves, on made-up modules -------------------------------


def _made_up(**sources):
    """`Module`s from `path="source"` (path's `/` spelled `__`)."""
    return [
        Module(path.replace("__", "/") + ".py", source)
        for path, source in sources.items()
    ]


def test_the_checks_catch_an_upward_import_at_module_scope():
    modules = _made_up(
        models__bert="import keras_bert.fine_tuning\n",
        layers__dense="from keras_bert.models.task import Task\n",
        serving__export="from keras_bert import checkpoints\n",
        training__fit="from keras_bert.layers import dense\n",  # down
        models__task="from keras_bert.models import bert\n",  # same folder
    )
    upward, facade = upward_imports(modules)
    assert upward == [
        "models/bert.py: keras_bert.fine_tuning (in module scope)",
        "layers/dense.py: keras_bert.models.task (in module scope)",
    ]
    assert facade == []


def test_the_checks_catch_an_upward_import_inside_a_function():
    (module,) = _made_up(
        models__bert=(
            "def other():\n"
            "    from keras_bert import serving\n"
            "class Model:\n"
            "    def fit(self):\n"
            "        def helper():\n"
            "            import keras_bert.checkpoints.hub\n"
        )
    )
    assert upward_imports([module]) == (
        [
            "models/bert.py: keras_bert.serving (in other)",
            "models/bert.py: keras_bert.checkpoints.hub (in fit)",
        ],
        [],
    )


def test_the_checks_allow_the_facades_and_only_to_their_floor():
    (module,) = _made_up(
        models__bert=(
            "class Model:\n"
            "    def from_checkpoint(self):\n"
            "        from keras_bert.checkpoints import load_checkpoint\n"
            "    @classmethod\n"
            "    def from_preset(cls):\n"
            "        from keras_bert import checkpoints\n"
            "    def from_checkpoint_too(self):\n"
            "        from keras_bert import checkpoints\n"
            "def from_preset():\n"
            "    from keras_bert.fine_tuning import runner\n"
        )
    )
    upward, facade = upward_imports([module])
    assert facade == [
        "models/bert.py: keras_bert.checkpoints (in from_checkpoint)",
        "models/bert.py: keras_bert.checkpoints (in from_preset)",
    ]
    assert upward == [
        "models/bert.py: keras_bert.checkpoints (in from_checkpoint_too)",
        "models/bert.py: keras_bert.fine_tuning (in from_preset)",
    ]
    # The façade's import does not make a cycle; the others do count.
    assert folder_graph([module]) == {"models": {"checkpoints", "fine_tuning"}}
    # Without the façade table, the façade's own imports go up too.
    assert len(upward_imports([module], facades={})[0]) == 4


def test_the_checks_resolve_relative_imports():
    (module,) = _made_up(
        layers__attention__block=(
            "from . import softmax\n"
            "from ..embedding import Embedding\n"
            "from ...models.task import Task\n"
        )
    )
    assert [name for name, _, _ in imports(module)] == [
        "keras_bert.layers.attention",
        "keras_bert.layers.embedding",
        "keras_bert.models.task",
    ]
    assert upward_imports([module])[0] == [
        "layers/attention/block.py: keras_bert.models.task (in module scope)"
    ]


def test_the_checks_catch_a_private_name():
    modules = _made_up(
        models__bert=(
            "from keras_bert.files import _private, public, __version__\n"
            "def f():\n"
            "    from keras_bert.layers.dense import _kernel\n"
        ),
        models__task="import keras_bert._secret\nimport os._x\n",
    )
    assert private_imports(modules) == [
        "models/bert.py: keras_bert.files._private",
        "models/bert.py: keras_bert.layers.dense._kernel",
    ]


def test_the_checks_catch_folder_cycles():
    two = _made_up(
        models__bert="from keras_bert.serving import export\n",
        serving__export="def f():\n    from keras_bert.models import bert\n",
    )
    assert folder_cycles(folder_graph(two)) == ["models -> serving -> models"]
    three = _made_up(
        text__tokenizer="import keras_bert.data.masking\n",
        data__masking="from keras_bert.layers import dense\n",
        layers__dense="from keras_bert.text import tokenizer\n",
        files__io="import keras_bert.validation\n",  # no loop
    )
    assert folder_cycles(folder_graph(three)) == [
        "data -> layers -> text -> data"
    ]
    # A façade's import is no edge: the same pair through it is no loop.
    facade = _made_up(
        models__bert="def from_preset():\n    import keras_bert.checkpoints\n",
        checkpoints__load="from keras_bert.models import bert\n",
    )
    assert folder_cycles(folder_graph(facade)) == []


def test_the_checks_catch_an_unknown_folder():
    modules = _made_up(
        plugins__extra="from keras_bert.models import bert\n",
        models__bert="from keras_bert.nowhere import thing\n",
        models__task="from keras_bert import BertClassifier\n",
        layers__dense="import keras_bert.files\n",
    )
    assert unknown_folders(modules) == [
        "plugins/extra.py: plugins",
        "models/bert.py: keras_bert.nowhere",
        "models/task.py: keras_bert.BertClassifier",
    ]
    # A folder without a floor is reported there, not raised on here.
    assert upward_imports(modules) == ([], [])


# --- The report ---------------------------------------------------------------


def report(modules=None):
    """The package's folder import graph, its upward imports (façades
    apart) and its folder cycles, as printed lines."""
    modules = MODULES if modules is None else modules
    graph = folder_graph(modules)
    upward, facade = upward_imports(modules)
    cycles = folder_cycles(graph)
    unknown = unknown_folders(modules)
    lines = [f"Folder import graph ({len(modules)} modules, façades aside):"]
    for folder in sorted(graph, key=lambda f: (FLOORS.get(f, -1), f)):
        targets = ", ".join(
            f"{t} ({FLOORS.get(t, '?')})" for t in sorted(graph[folder])
        )
        lines.append(f"  {folder} ({FLOORS.get(folder, '?')}) -> {targets}")
    for title, items in [
        ("Upward imports outside the façades", upward),
        ("Façade imports (allowed)", facade),
        ("Folder cycles", cycles),
        ("Folders without a floor", unknown),
    ]:
        lines.append(f"{title}: {len(items)}")
        lines.extend(f"  {item}" for item in items)
    lines.append(
        f"{len(upward)} upward imports, {len(cycles)} cycles, "
        f"{len(facade)} façade imports "
        f"({', '.join(sorted(FACADES))})"
    )
    return lines


def test_the_report_names_what_it_counts():
    modules = _made_up(
        models__bert="import keras_bert.serving\n",
        serving__export="import keras_bert.models\n",
    )
    lines = report(modules)
    assert "  models (3) -> serving (4)" in lines
    assert "  models/bert.py: keras_bert.serving (in module scope)" in lines
    assert "  models -> serving -> models" in lines
    assert lines[-1].startswith("1 upward imports, 1 cycles, 0 façade")


if __name__ == "__main__":
    sys.stdout.write("\n".join(report()) + "\n")
