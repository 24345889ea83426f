"""Independent copies of the official SQuAD scoring, and the real dev set.

Parity tests score the same predictions with our metrics and with a
reference that ports the official `evaluate-v1.1.py` / `evaluate-v2.0.py`:

- `tf_models`: `official/nlp/tools/squad_evaluate_v1_1.py` and
  `squad_evaluate_v2_0.py` of tf-models-official; they need only absl, so
  `pip install --no-deps tf-models-official` is enough (its declared
  dependencies would replace TensorFlow). v1.1 and v2.0 evaluations.

Each helper `pytest.skip`s with the install command when its material is
missing.
"""

import importlib
import json
import os
import types

import pytest

SQUAD_DIR = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "..", "shared", "squad"
)
# The parity tests' references: tf-models-official's copies, installed by
# `.ci/run` from requirements-references.txt. (transformers 4.x's copy gave
# the same scores when last checked; transformers 5 no longer ships it.)
REFERENCES = ("tf_models",)


def squad_dev_data():
    """The `data` list of the real `shared/squad/dev.json`, or skip."""
    path = os.path.join(SQUAD_DIR, "dev.json")
    if not os.path.exists(path):
        pytest.skip(f"needs the real SQuAD dev set at {path} (shared/squad)")
    with open(path, encoding="utf-8") as f:
        return json.load(f)["data"]


def examples_from_data(data):
    """The `read_squad_examples` dict fields that the metrics read.

    Built here from the JSON so these tests do not depend on the reader.
    """
    examples = {"id": [], "answers": [], "is_impossible": [], "context": []}
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                texts = [answer["text"] for answer in qa["answers"]]
                impossible = qa.get("is_impossible", False) or not texts
                examples["id"].append(qa["id"])
                examples["answers"].append([""] if impossible else texts)
                examples["is_impossible"].append(impossible)
                examples["context"].append(paragraph["context"])
    return examples


def official_squad_scoring(name):
    """The reference `name` (one of `REFERENCES`) as a common interface.

    Returns a namespace with `compute_exact(gold, prediction)`,
    `compute_f1(gold, prediction)` (v2.0's rule), `evaluate_v2(data,
    predictions, null_odds=None)` returning the official v2.0 keys, and
    `evaluate_v1(data, predictions)`.
    """
    if name == "tf_models":
        return _tf_models_scoring()
    raise ValueError(f"Unknown reference {name!r}; one of {REFERENCES}.")


def _tf_models_scoring():
    try:
        v1 = importlib.import_module("official.nlp.tools.squad_evaluate_v1_1")
        v2 = importlib.import_module("official.nlp.tools.squad_evaluate_v2_0")
    except ImportError:
        pytest.skip(
            "needs tf-models-official's SQuAD scripts: "
            "pip install --no-deps tf-models-official"
        )

    def evaluate_v1(data, predictions):
        result = v1.evaluate(data, predictions)  # fractions, not percent
        return {
            "exact_match": 100.0 * result["exact_match"],
            "f1": 100.0 * result["final_f1"],
        }

    def evaluate_v2(data, predictions, null_odds=None):
        result = v2.evaluate(data, predictions, null_odds)
        renamed = {}
        for key, value in result.items():
            if key.startswith("pr_"):  # precision-recall extras
                continue
            if key.startswith("final_"):  # its name for best_*
                if null_odds is None:
                    continue
                key = "best_" + key[len("final_") :]
            renamed[key] = value
        return renamed

    return types.SimpleNamespace(
        compute_exact=v2._compute_exact,
        compute_f1=v2._compute_f1,
        evaluate_v2=evaluate_v2,
        evaluate_v1=evaluate_v1,
    )
