"""A small DEMO sample in GLUE's MNLI layout, written by this project.

Not GLUE data and not a benchmark: template sentences made up here, so
the quickstart runs end to end offline (`recipes/glue.py --demo`). Every
row's genre is `demo`, and a `DEMO_README.txt` beside the files says so.
Matched splits use one set of people and actions, mismatched splits
another, as MNLI's matched/mismatched genres differ.
"""

import csv
import io
import os

import numpy as np
import tensorflow as tf

from keras_bert import files
from keras_bert.fine_tuning.glue.tasks import get_glue_task

_MATCHED = {
    "people": [
        "The baker",
        "My neighbour",
        "The old sailor",
        "A young doctor",
        "The teacher",
        "Our driver",
        "The gardener",
        "A tall student",
    ],
    "actions": [
        ("painted", "paint", "the fence"),
        ("repaired", "repair", "the bicycle"),
        ("sold", "sell", "the old piano"),
        ("cooked", "cook", "a large dinner"),
        ("washed", "wash", "the car"),
        ("opened", "open", "the window"),
    ],
}
_MISMATCHED = {
    "people": [
        "The pilot",
        "A quiet lawyer",
        "The mayor",
        "My cousin",
        "The nurse",
        "A famous singer",
    ],
    "actions": [
        ("cleaned", "clean", "the kitchen"),
        ("built", "build", "a wooden boat"),
        ("lost", "lose", "the keys"),
        ("visited", "visit", "the museum"),
        ("fixed", "fix", "the roof"),
    ],
}
_TIMES = ["in the morning", "after lunch", "on Sunday", "before the storm"]
_HYPOTHESES = {
    "entailment": ["Someone {past} {obj}.", "{person} {past} something."],
    "neutral": [
        "{person} {past} {obj} for a friend.",
        "{person} was tired {time}.",
    ],
    "contradiction": [
        "{person} did not {base} {obj}.",
        "Nobody {past} {obj}.",
    ],
}
DEMO_NOTE = (
    "DEMO SAMPLE written by keras_bert.fine_tuning.glue.demo: template "
    "sentences in GLUE's MNLI file layout, made up for the quickstart. "
    "Not GLUE/MNLI data and not a benchmark; its scores mean nothing "
    "about a model.\n"
)


def write_mnli_demo(data_dir, num_train=960, num_eval=120, seed=0):
    """Writes the DEMO sample as `data_dir/MNLI/*.tsv`.

    Files and columns are exactly MNLI's (`train.tsv`,
    `dev_matched.tsv`, `dev_mismatched.tsv`, `test_matched.tsv`,
    `test_mismatched.tsv`; parse columns, `label1`..`label5`,
    `gold_label`), so `--data_dir=data_dir --task=mnli` reads it as it
    would read GLUE.

    Args:
        data_dir: str. The GLUE-style directory to write into (any path
            `tf.io.gfile` accepts).
        num_train: int. Training examples. Defaults to `960`.
        num_eval: int. Examples in each dev split; test splits get half.
            Defaults to `120`.
        seed: int. Seed of the sentence choices.

    Returns:
        The path of the `MNLI` directory written.

    Example:
    ```python
    write_mnli_demo("/tmp/glue_demo")  # /tmp/glue_demo/MNLI/train.tsv, ...
    ```
    """
    task = get_glue_task("mnli")
    rng = np.random.default_rng(seed)
    directory = os.path.join(data_dir, task.directory)
    tf.io.gfile.makedirs(directory)
    files.write_text(os.path.join(data_dir, "DEMO_README.txt"), DEMO_NOTE)
    plan = {
        "train": (_MATCHED, num_train),
        "validation_matched": (_MATCHED, num_eval),
        "validation_mismatched": (_MISMATCHED, num_eval),
        "test_matched": (_MATCHED, num_eval // 2),
        "test_mismatched": (_MISMATCHED, num_eval // 2),
    }
    for split_name, (vocabulary, count) in plan.items():
        split = task.splits[split_name]
        path = os.path.join(directory, split.filename)
        text = io.StringIO()
        writer = csv.writer(
            text,
            delimiter="\t",
            lineterminator="\n",
            quoting=csv.QUOTE_NONE,
            quotechar=None,
        )
        writer.writerow(split.columns)
        for index in range(count):
            row = _example(rng, vocabulary, index)
            writer.writerow([row[column] for column in split.columns])
        files.write_text(path, text.getvalue())
    return directory


def _example(rng, vocabulary, index):
    person = vocabulary["people"][rng.integers(len(vocabulary["people"]))]
    actions = vocabulary["actions"]
    past, base, obj = actions[rng.integers(len(actions))]
    time = _TIMES[rng.integers(len(_TIMES))]
    label = list(_HYPOTHESES)[rng.integers(3)]
    templates = _HYPOTHESES[label]
    hypothesis = templates[rng.integers(len(templates))].format(
        person=person, past=past, base=base, obj=obj, time=time
    )
    premise = f"{person} {past} {obj} {time}."
    return {
        "index": str(index),
        "promptID": str(100000 + index),
        "pairID": f"{100000 + index}{label[0]}",
        "genre": "demo",
        "sentence1_binary_parse": _binary_parse(premise),
        "sentence2_binary_parse": _binary_parse(hypothesis),
        "sentence1_parse": _parse(premise),
        "sentence2_parse": _parse(hypothesis),
        "sentence1": premise,
        "sentence2": hypothesis,
        "label1": label,
        "label2": label,
        "label3": label,
        "label4": label,
        "label5": label,
        "gold_label": label,
    }


def _binary_parse(sentence):
    return (
        "( "
        + sentence.rstrip(".").replace(" ", " ( ")
        + " )" * (sentence.count(" "))
        + " . )"
    )


def _parse(sentence):
    words = sentence.rstrip(".").split()
    return "(ROOT (S " + " ".join(f"(W {w})" for w in words) + " (. .)))"
