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
   (`checkpoints`) and exporting it for serving (`serving`).
5. Fine-tuning jobs: a job's data, metrics, outputs and the shared
   runner (`fine_tuning`).
6. What the command-line recipes share (`cli`), and the deprecated names
   (`deprecations`), which alias every floor.

Recipes and benchmarks stand on top and may import anything.

One façade goes up, imported inside the method that is the façade:
`from_checkpoint` and `from_preset` on a model or the tokenizer may import
`checkpoints`, as keras-hub's `from_preset` does, so that users find
loading on the class they load.

Folders also must not import each other in a loop, even on one floor: a
change to one folder would otherwise ripple through the loop. And no
module imports another module's private (underscored) name.
"""

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "keras_bert")
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
    "fine_tuning": 5,
    "cli": 6,
    "deprecations": 6,
}
# Function name → the higher floor it may import, inside the function.
FACADES = {
    "from_checkpoint": "checkpoints",
    "from_preset": "checkpoints",
}


def _modules():
    """(folder, module path relative to the package, AST) of each module."""
    for root, _, names in os.walk(PACKAGE):
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            relative = os.path.relpath(path, PACKAGE)
            if relative == "__init__.py":
                continue  # the package's top level re-exports everything
            folder = relative.split(os.sep)[0].removesuffix(".py")
            with open(path, encoding="utf-8") as file:
                yield folder, relative, ast.parse(file.read(), path)


def _imports(tree):
    """(imported keras_bert module, imported names, enclosing function)."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, function or child.name)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name, (), function))
            elif isinstance(child, ast.ImportFrom) and child.module:
                names = tuple(alias.name for alias in child.names)
                if child.module == "keras_bert":
                    for name in names:
                        found.append((f"keras_bert.{name}", (), function))
                else:
                    found.append((child.module, names, function))
            visit(child, function)

    visit(tree, None)
    return [
        (module, names, function)
        for module, names, function in found
        if module == "keras_bert" or module.startswith("keras_bert.")
    ]


def _folder(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


MODULES = list(_modules())


def test_every_folder_has_a_floor():
    assert sorted({folder for folder, _, _ in MODULES} - set(FLOORS)) == []


@pytest.mark.parametrize(
    "folder, relative, tree", MODULES, ids=[m[1] for m in MODULES]
)
def test_imports_go_down_the_floors(folder, relative, tree):
    upward = []
    for module, _, function in _imports(tree):
        target = _folder(module)
        if target is None or FLOORS[target] <= FLOORS[folder]:
            continue
        if _is_facade(function, target):
            continue
        upward.append(f"{module} (in {function or 'module scope'})")
    assert upward == [], (
        f"keras_bert/{relative} (floor {FLOORS[folder]}, {folder}) imports "
        f"from a higher floor: {upward}. Move the code to the floor it "
        "belongs to, or have the caller pass it in."
    )


@pytest.mark.parametrize(
    "folder, relative, tree", MODULES, ids=[m[1] for m in MODULES]
)
def test_no_private_names_are_imported_from_other_modules(
    folder, relative, tree
):
    private = [
        f"{module}.{name}"
        for module, names, _ in _imports(tree)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert private == [], (
        f"keras_bert/{relative} imports private names: {private}. Make the "
        "name public where it is defined, or keep its use in that module."
    )


def _is_facade(function, target):
    return function in FACADES and FACADES[function] == target


def test_no_import_cycles_between_folders():
    """The façade aside (it goes up by design, inside a method)."""
    edges = {}
    for folder, _, tree in MODULES:
        for module, _, function in _imports(tree):
            target = _folder(module)
            if target and target != folder and not _is_facade(function, target):
                edges.setdefault(folder, set()).add(target)
    cycles = []

    def walk(node, path):
        for target in sorted(edges.get(node, ())):
            if target == path[0]:
                cycles.append(" -> ".join(path + [target]))
            elif target not in path and target > path[0]:
                walk(target, path + [target])

    for start in sorted(edges):
        walk(start, [start])
    assert cycles == [], f"Folders that import each other in a loop: {cycles}"


def test_the_checks_catch_what_they_forbid():
    """An upward import, a façade import and a cycle, in made-up code."""
    tree = ast.parse(
        "import keras_bert.fine_tuning\n"
        "def from_checkpoint():\n"
        "    from keras_bert.checkpoints import load_checkpoint\n"
        "def other():\n"
        "    from keras_bert import serving\n"
        "from keras_bert.files import _private\n"
    )
    imports = _imports(tree)
    assert [(m, f) for m, _, f in imports] == [
        ("keras_bert.fine_tuning", None),
        ("keras_bert.checkpoints", "from_checkpoint"),
        ("keras_bert.serving", "other"),
        ("keras_bert.files", None),
    ]
    assert imports[3][1] == ("_private",)
    assert _is_facade("from_checkpoint", "checkpoints")
    assert not _is_facade("predict", "serving")
    assert not _is_facade("fill_mask", "serving")
    assert not _is_facade("other", "serving")
