r"""Writes Linux kernel documentation pages as a long-document data set.

    python benchmarks/kernel_docs_data.py --output_dir=/tmp/kernel_docs

Reads the reST pages of Debian's `linux-doc-6.1` package
(`/usr/share/doc/linux-doc-6.1/Documentation`, each `.rst` gzip'd) and
labels each page by its top-level `Documentation/` folder, for the
`FOLDERS`: the six English folders holding over 100 pages each
(`translations/` is skipped, and so are the small ones). Each page is
its whole reST source (markup included, as a user would feed files),
without the pages of fewer than `--min_words` words (tables of contents).
The split is deterministic: a page goes to dev when the MD5 of its path
under `Documentation/` is 0 modulo 5 (about a fifth), else to train.

Writes `train.jsonl` and `dev.jsonl` (`{"text", "label", "path"}` a line,
the `{"text", "label"}` layout `recipes/classify.py` reads) and prints, per
split, the pages per label, the median length in words and the fraction
of pages longer than 512 WordPiece tokens (MiniLM's uncased vocabulary,
`[CLS]` and `[SEP]` not counted). Write it outside the repository.
"""

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

ROOT = "/usr/share/doc/linux-doc-6.1/Documentation"
# The English top-level folders with over 100 reST pages in linux-doc-6.1.
FOLDERS = (
    "admin-guide",
    "driver-api",
    "filesystems",
    "hwmon",
    "networking",
    "userspace-api",
)

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where train.jsonl and dev.jsonl go.")
flags.DEFINE_string("root", ROOT, "linux-doc's Documentation/ folder.")
flags.DEFINE_integer("min_words", 50, "Pages with fewer words are left out.")


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
    from benchmarks import common

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    counts = []
    for first in range(0, len(texts), 64):
        batch = tf.constant(texts[first : first + 64])
        counts += tokenizer.tokenize_batch(batch).row_lengths().numpy().tolist()
    return counts


def main(argv):
    from keras_bert import files

    del argv
    if not FLAGS.output_dir:
        raise app.UsageError("Pass --output_dir (outside the repository).")
    pages = read_pages(FLAGS.root, FOLDERS, FLAGS.min_words)
    files.makedirs(FLAGS.output_dir)
    for split in ("train", "dev"):
        rows = [page for page in pages if split_of(page[0]) == split]
        path = files.join(FLAGS.output_dir, f"{split}.jsonl")
        files.write_text(
            path,
            "".join(
                json.dumps({"text": text, "label": folder, "path": page_path})
                + "\n"
                for page_path, folder, text in rows
            ),
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


if __name__ == "__main__":
    app.run(main)
