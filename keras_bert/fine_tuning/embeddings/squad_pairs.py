"""Question → paragraph pairs from a SQuAD file, to train embeddings."""

import json

import tensorflow as tf


def squad_question_paragraph_pairs(path):
    """Every question of a SQuAD v1.1 / v2.0 file with its paragraph.

    Args:
        path: str. A SQuAD JSON file (`train-v1.1.json`, `dev-v1.1.json`).

    Returns:
        A list of `(question, paragraph)` tuples, in file order.

    Example:
    ```python
    pairs = squad_question_paragraph_pairs("squad/dev.json")
    pairs[0]  # ("Which NFL team ...?", "Super Bowl 50 was ...")
    ```
    """
    with tf.io.gfile.GFile(path) as f:
        data = json.load(f)["data"]
    return [
        (qa["question"].strip(), paragraph["context"])
        for article in data
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def write_pairs_jsonl(pairs, path):
    """Writes `(anchor, positive)` pairs as JSONL (`read_pairs` reads it).

    Args:
        pairs: iterable of `(anchor, positive)` str tuples.
        path: str. The output file (any path `tf.io.gfile` accepts).

    Returns:
        int. The number of lines written.

    Example:
    ```python
    write_pairs_jsonl([("q", "p")], "/tmp/pairs.jsonl")  # 1
    ```
    """
    lines = [
        json.dumps({"anchor": anchor, "positive": positive}) + "\n"
        for anchor, positive in pairs
    ]
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("".join(lines))
    return len(lines)
