"""Every file the package or a recipe touches goes through `tf.io.gfile`.

Users keep data, checkpoints and exports in object storage (`gs://`,
`s3://`, HDFS), which Python's `open` and `os` cannot reach: a call to them
either fails there or, worse, writes to a local directory named `gs:`. This
test reads the source of `keras_bert/` and `recipes/` and fails on any such
call, unless its line says why it is safe: `# gfile-exempt: <reason>`
(e.g. a temporary local copy made for a library that needs a local path).
The ram:// end-to-end test (`tests/test_ram_filesystem.py`) shows the rule
holds in practice.
"""

import io
import os
import re
import tokenize

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKED = ("keras_bert", "recipes")
# Local-only file access, as it is written in Python.
LOCAL_ONLY = re.compile(
    r"(?<![\w.])open\("
    r"|\bos\.(makedirs|mkdir|remove|unlink|rename|replace|listdir|scandir"
    r"|walk|stat|chmod|rmdir)\("
    r"|\bos\.path\.(exists|isdir|isfile|getsize|getmtime)\("
    r"|\bshutil\.\w+\("
    r"|\bglob\.glob\("
    r"|\bpathlib\b|(?<![\w.])Path\("
    r"|\bnp\.(load|save|savez)\("
)
EXEMPT = re.compile(r"#\s*gfile-exempt:\s*\S")


def source_files():
    for top in CHECKED:
        for directory, _, names in os.walk(os.path.join(REPO, top)):
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def violations(path):
    """`path:line: code` of each local-only call outside strings."""
    with open(path, encoding="utf-8") as file:
        source = file.read()
    code, comments = {}, {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        line = token.start[0]
        if token.type == tokenize.COMMENT:
            comments[line] = token.string
        elif token.type not in (tokenize.STRING, tokenize.NL, tokenize.NEWLINE):
            code[line] = code.get(line, "") + " " + token.string
    lines = source.splitlines()
    return [
        f"{os.path.relpath(path, REPO)}:{line}: {lines[line - 1].strip()}"
        for line, text in sorted(code.items())
        if LOCAL_ONLY.search(re.sub(r"\s*([.(])\s*", r"\1", text))
        and not EXEMPT.search(comments.get(line, ""))
    ]


def test_no_local_only_file_access():
    found = [v for path in source_files() for v in violations(path)]
    assert not found, (
        "Use tf.io.gfile or keras_bert.files (or say why the path is "
        "always local with `# gfile-exempt: <reason>`):\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "line, bad",
    [
        ("    with open(path) as f:", True),
        ("    os.makedirs(d, exist_ok=True)", True),
        ("    if os.path.exists(p):", True),
        ("    shutil.rmtree(d)", True),
        ("    files = glob.glob(pattern)", True),
        ("    with tf.io.gfile.GFile(path) as f:", False),
        ("    with gzip.open(raw) as f:", False),
        ("    safe_open(local, framework='np')", False),
        ("    os.path.join(a, b)", False),
        ("    shutil.rmtree(d)  # gfile-exempt: a local temporary dir", False),
    ],
)
def test_the_rule_itself(tmp_path, line, bad):
    path = tmp_path / "module.py"
    path.write_text(f'"""Doc: open(x) in a docstring is fine."""\n\n{line}\n')
    assert bool(violations(str(path))) == bad
