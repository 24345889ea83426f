"""benchmarks/data_sets.py: entity_types, from CoNLL tags."""

import json

from benchmarks import data_sets

CONLL = """-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER

Nothing NN I-NP O
here RB I-ADVP O
"""


def test_each_sentence_lists_its_entity_types(tmp_path):
    for name in data_sets.SPLITS.values():
        (tmp_path / name).write_text(CONLL)
    paths = data_sets.build(str(tmp_path / "out"), str(tmp_path))
    with open(paths["dev"]) as file:
        rows = [json.loads(line) for line in file]
    assert rows == [
        {"text": "EU rejects German call .", "labels": ["MISC", "ORG"]},
        {"text": "Peter Blackburn", "labels": ["PER"]},
        {"text": "Nothing here", "labels": []},
    ]
    assert data_sets.describe(paths["train"]) == (
        3, {"MISC": 1, "ORG": 1, "PER": 1}, 1
    )  # fmt: skip
