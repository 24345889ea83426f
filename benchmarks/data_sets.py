r"""The data sets the task races build, written outside the repository.

    python benchmarks/data_sets.py --data_set=entity_types \
        --output_dir=/tmp/entity_types
    python benchmarks/data_sets.py --data_set=kernel_docs \
        --output_dir=/tmp/kernel_docs

`entity_types` (`task_race.py --task=multi_label`'s): which entity types
a sentence mentions. From CoNLL-2003's annotations (`--conll_dir`, default
`../shared/conll2003`: train.txt → train, valid.txt → dev) each sentence
becomes one line of `recipes/classify.py --multi_label`'s layout,
`{"text": "EU rejects German call .", "labels": ["MISC", "ORG"]}`: the
entity types (`LOC`, `MISC`, `ORG`, `PER`) with at least one entity in
the sentence, sorted (`[]` for none), the text its tokens joined by
spaces. Prints each split's size and label counts.

`kernel_docs` (`task_race.py --task=long_documents`'s): Linux kernel
documentation pages as long documents. The reST pages of Debian's
`linux-doc-6.1` package (`--root`, each `.rst` gzip'd), labelled by
their top-level `Documentation/` folder, for the `FOLDERS`: the six
English folders with over 100 pages each (`translations/` and the small ones skipped). Each
page is its whole reST source (markup included, as a user would feed
files), without the pages of fewer than `--min_words` words (tables of
contents); a page goes to dev when the MD5 of its path under
`Documentation/` is 0 modulo 5 (about a fifth), else to train. Lines are
`{"text", "label", "path"}`; prints, per split, the pages per label, the
median length in words and the fraction of pages longer than 512
WordPiece tokens (MiniLM's uncased vocabulary, `[CLS]` and `[SEP]` not
counted).

Each writes `train.jsonl` and `dev.jsonl` into `--output_dir` (the texts
are not ours to commit).
"""

import collections
import gzip
import hashlib
import io
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

SPLITS = {"train": "train.txt", "dev": "valid.txt"}
CONLL = os.path.join(common.SHARED, "conll2003")
ROOT = "/usr/share/doc/linux-doc-6.1/Documentation"
# The English top-level folders with over 100 reST pages in linux-doc-6.1.
FOLDERS = (
    "admin-guide", "driver-api", "filesystems", "hwmon", "networking",
    "userspace-api",
)  # fmt: skip


def define_flags():
    """The script's flags, defined when it runs (tests import the module
    beside other benchmarks that define `--output_dir` too)."""
    flags.DEFINE_enum(
        "data_set", None, ["entity_types", "kernel_docs"], "What to build."
    )
    flags.DEFINE_string("output_dir", None, "Where the .jsonl files go.")
    flags.DEFINE_string(
        "conll_dir", CONLL, "CoNLL-2003's train.txt, valid.txt."
    )
    flags.DEFINE_string("root", ROOT, "linux-doc's Documentation/ folder.")
    flags.DEFINE_integer(
        "min_words", 50, "Pages with fewer words are left out."
    )
    flags.mark_flags_as_required(["data_set", "output_dir"])


def write_jsonl(path, rows, ensure_ascii=False):
    from keras_bert import files

    files.write_text(
        path,
        "".join(
            json.dumps(row, ensure_ascii=ensure_ascii) + "\n" for row in rows
        ),
    )


# === entity_types ===


def sentence_rows(path):
    """`{"text", "labels"}` of every sentence of a CoNLL file."""
    from keras_bert.fine_tuning.ner.conll import entity_types
    from keras_bert.fine_tuning.ner.conll import read_conll

    data = read_conll(path)
    return [
        {"text": " ".join(words), "labels": entity_types([tags])}
        for words, tags in zip(data["words"], data["tags"])
    ]


def build(output_dir, conll_dir=CONLL):
    """Writes entity_types' `train.jsonl` and `dev.jsonl`; returns
    `{split: path}`."""
    from keras_bert import files

    files.makedirs(output_dir)
    paths = {}
    for split, name in SPLITS.items():
        paths[split] = os.path.join(output_dir, f"{split}.jsonl")
        write_jsonl(paths[split], sentence_rows(os.path.join(conll_dir, name)))
    return paths


def describe(path):
    """`(sentences, {label: sentences with it}, sentences with none)`."""
    from keras_bert import files

    counts, none, total = collections.Counter(), 0, 0
    for line in files.read_text(path).splitlines():
        labels = json.loads(line)["labels"]
        counts.update(labels)
        none += not labels
        total += 1
    return total, dict(sorted(counts.items())), none


# === kernel_docs ===


def read_pages(root=ROOT, folders=FOLDERS, min_words=50):
    """`[(path, folder, text)]` of the reST pages under `root/<folder>`,
    sorted by path (relative to `root`)."""
    import tensorflow as tf

    from keras_bert import files

    if not files.isdir(root):
        raise FileNotFoundError(
            f"{root} is missing: `apt-get install linux-doc-6.1` first."
        )
    pages = []
    for folder in folders:
        top = files.join(root, folder)
        for directory, _, names in tf.io.gfile.walk(top):
            for name in names:
                if not name.endswith((".rst", ".rst.gz")):
                    continue
                path = files.join(directory, name)
                data = files.read_bytes(path)
                if name.endswith(".gz"):
                    data = gzip.decompress(data)
                # Decoded as a text-mode file reads: universal newlines.
                text = io.TextIOWrapper(
                    io.BytesIO(data), encoding="utf-8", errors="replace"
                ).read()
                if len(text.split()) >= min_words:
                    pages.append((os.path.relpath(path, root), folder, text))
    return sorted(pages)


def split_of(path):
    """`"dev"` for about a fifth of the paths (by MD5), else `"train"`."""
    digest = hashlib.md5(path.encode("utf-8")).hexdigest()
    return "dev" if int(digest, 16) % 5 == 0 else "train"


def token_counts(texts):
    """WordPiece tokens of each text, by MiniLM's vocabulary."""
    import tensorflow as tf

    import keras_bert

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    counts = []
    for first in range(0, len(texts), 64):
        batch = tf.constant(texts[first : first + 64])
        counts += tokenizer.tokenize_batch(batch).row_lengths().numpy().tolist()
    return counts


def build_kernel_docs(output_dir, root=ROOT, min_words=50):
    """Writes kernel_docs' `train.jsonl` and `dev.jsonl`, printing each
    split's description."""
    from keras_bert import files

    pages = read_pages(root, FOLDERS, min_words)
    files.makedirs(output_dir)
    for split in ("train", "dev"):
        rows = [page for page in pages if split_of(page[0]) == split]
        path = files.join(output_dir, f"{split}.jsonl")
        write_jsonl(
            path,
            [
                {"text": text, "label": folder, "path": page_path}
                for page_path, folder, text in rows
            ],
            ensure_ascii=True,
        )
        words = [len(text.split()) for _, _, text in rows]
        tokens = token_counts([text for _, _, text in rows])
        labels = {f: sum(row[1] == f for row in rows) for f in FOLDERS}
        print(
            f"{split}: {len(rows)} pages {labels}; median "
            f"{statistics.median(words):.0f} words, "
            f"{statistics.median(tokens):.0f} tokens; "
            f"{sum(t > 512 for t in tokens) / len(tokens):.1%} longer than "
            f"512 tokens -> {path}"
        )


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    if FLAGS.data_set == "kernel_docs":
        return build_kernel_docs(FLAGS.output_dir, FLAGS.root, FLAGS.min_words)
    for split, path in build(FLAGS.output_dir, FLAGS.conll_dir).items():
        total, counts, none = describe(path)
        print(f"{split}: {path}: {total} sentences, {none} with no entity; "
              f"sentences per type {counts}")  # fmt: skip


if __name__ == "__main__":
    define_flags()
    app.run(main)
