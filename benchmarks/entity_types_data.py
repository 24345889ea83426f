"""Builds the multi-label data set: which entity types a sentence mentions.

From CoNLL-2003's annotations (`../shared/conll2003`: train.txt → train,
valid.txt → dev), each sentence becomes one JSONL line of
`recipes/classify.py --multi_label`'s layout:

    {"text": "EU rejects German call to boycott British lamb .",
     "labels": ["MISC", "ORG"]}

`labels` are the entity types (`LOC`, `MISC`, `ORG`, `PER`) that have at
least one entity in the sentence, sorted; `[]` for none. The text is the
sentence's tokens joined by spaces, as the file has them. The files are
written outside the repository (CoNLL-2003's text is not ours to commit):

    python benchmarks/entity_types_data.py --output_dir=/tmp/entity_types

prints each split's size and label counts.
"""

import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

SPLITS = {"train": "train.txt", "dev": "valid.txt"}
CONLL = os.path.join(common.SHARED, "conll2003")



def define_flags():
    """The script's flags, defined when it runs (tests import the module
    beside other benchmarks that define `--output_dir` too)."""
    flags.DEFINE_string(
        "output_dir", "/tmp/entity_types", "Where train.jsonl and dev.jsonl go."
    )
    flags.DEFINE_string("conll_dir", CONLL, "CoNLL-2003's train.txt, valid.txt.")


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
    """Writes `train.jsonl` and `dev.jsonl`; returns `{split: path}`."""
    tf.io.gfile.makedirs(output_dir)
    paths = {}
    for split, name in SPLITS.items():
        rows = sentence_rows(os.path.join(conll_dir, name))
        paths[split] = os.path.join(output_dir, f"{split}.jsonl")
        with tf.io.gfile.GFile(paths[split], "w") as file:
            for row in rows:
                file.write(json.dumps(row, ensure_ascii=False) + "\n")
    return paths


def describe(path):
    """`(sentences, {label: sentences with it}, sentences with none)`."""
    counts, none, total = collections.Counter(), 0, 0
    with tf.io.gfile.GFile(path) as file:
        for line in file:
            labels = json.loads(line)["labels"]
            counts.update(labels)
            none += not labels
            total += 1
    return total, dict(sorted(counts.items())), none


def main(argv):
    del argv
    for split, path in build(
        flags.FLAGS.output_dir, flags.FLAGS.conll_dir
    ).items():
        total, counts, none = describe(path)
        print(f"{split}: {path}: {total} sentences, {none} with no entity; "
              f"sentences per type {counts}")  # fmt: skip


if __name__ == "__main__":
    define_flags()
    app.run(main)
