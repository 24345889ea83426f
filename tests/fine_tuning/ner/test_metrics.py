"""Entity scores: hand-worked cases and parity with `seqeval` (conlleval)."""

import functools
import gzip
import json
import os
import random

import pytest
from seqeval import metrics as seqeval_metrics
from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities

from keras_bert.fine_tuning.ner.conll import convert_tags
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.training.ner_metrics import entity_scores
from keras_bert.training.ner_metrics import get_entities
from tests.fine_tuning.ner.data import shared_path

# Same counts, same float operations: parity is exact up to this.
TOLERANCE = 1e-12
TYPES = ("PER", "LOC", "ORG", "creative-work")


# === get_entities ===


@pytest.mark.parametrize(
    "tags, expected",
    [
        # IOB1: I- starts an entity; B- splits two of the same type.
        (["I-PER", "I-PER", "O", "I-LOC", "B-LOC"],
         [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4)]),
        # IOB2, the same entities.
        (["B-PER", "I-PER", "O", "B-LOC", "B-LOC"],
         [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4)]),
        # I- after O starts an entity, which runs to the end.
        (["O", "I-ORG", "I-ORG"], [("ORG", 1, 2)]),
        # Adjacent entities of one type, split by B-.
        (["B-PER", "I-PER", "B-PER"], [("PER", 0, 1), ("PER", 2, 2)]),
        # A change of type ends one entity and starts another.
        (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),
        # IOBES: S- is one token; E- closes; E- after E- starts anew.
        (["S-PER", "B-LOC", "I-LOC", "E-LOC", "E-LOC"],
         [("PER", 0, 0), ("LOC", 1, 3), ("LOC", 4, 4)]),
        # I- after E- or S- starts an entity; B- after B- too.
        (["E-PER", "I-PER", "S-PER", "I-PER", "B-PER", "B-PER"],
         [("PER", 0, 0), ("PER", 1, 1), ("PER", 2, 2), ("PER", 3, 3),
          ("PER", 4, 4), ("PER", 5, 5)]),
        # Hyphens inside a type are part of it.
        (["B-creative-work", "I-creative-work"], [("creative-work", 0, 1)]),
        (["O", "O"], []),
        ([], []),
    ],
)  # fmt: skip
def test_get_entities_hand_cases(tags, expected):
    assert get_entities(tags) == expected
    assert seqeval_entities(tags) == expected


@pytest.mark.parametrize("tag", ["PER", "X-PER", "B-", "b-PER", "", None])
def test_get_entities_rejects_bad_tags(tag):
    with pytest.raises(ValueError, match=rf"Invalid tag {tag!r} at token 1"):
        get_entities(["O", tag])


# === entity_scores, by hand ===


def test_entity_scores_hand_worked():
    gold = [
        ["B-PER", "I-PER", "O", "B-LOC", "O"],  # PER 0-1, LOC 3
        ["B-ORG", "I-ORG", "O", "B-MISC"],  # ORG 0-1, MISC 3
        ["O", "O"],
    ]
    predicted = [
        ["B-PER", "O", "O", "B-LOC", "O"],  # PER 0 (boundary), LOC 3 ok
        ["B-LOC", "I-LOC", "O", "B-MISC"],  # LOC 0-1 (type), MISC 3 ok
        ["B-PER", "O"],  # PER 0: no gold entity
    ]
    scores = entity_scores(gold, predicted)
    # 4 gold entities, 5 predicted, 2 correct (LOC 3, MISC 3).
    assert scores["num_gold"] == 4
    assert scores["num_predicted"] == 5
    assert scores["num_correct"] == 2
    assert scores["precision"] == 2 / 5
    assert scores["recall"] == 2 / 4
    # 2 * 0.4 * 0.5 / 0.9 = 4/9.
    assert scores["f1"] == pytest.approx(4 / 9, abs=TOLERANCE)
    # Wrong tokens: 1 in the first sentence, 2 in the second, 1 in the
    # third: 7 of 11 right.
    assert scores["accuracy"] == 7 / 11
    assert scores["per_type"] == {
        # LOC: 1 gold, 2 predicted, 1 correct: F1 2 * 1/2 * 1 / (3/2).
        "LOC": {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3),
                "support": 1, "num_predicted": 2, "num_correct": 1},
        "MISC": {"precision": 1.0, "recall": 1.0, "f1": 1.0,
                 "support": 1, "num_predicted": 1, "num_correct": 1},
        "ORG": {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                "support": 1, "num_predicted": 0, "num_correct": 0},
        "PER": {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                "support": 1, "num_predicted": 2, "num_correct": 0},
    }  # fmt: skip
    json.dumps(scores)  # JSON-ready


def test_entity_scores_iob1_against_iob2():
    # The same entities in two schemes: PER 0-1, PER 2, LOC 4.
    gold = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"]]
    predicted = [["B-PER", "I-PER", "B-PER", "O", "B-LOC"]]
    scores = entity_scores(gold, predicted)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (1, 1, 1)
    # Token accuracy compares the tags as written: 3 of 5 agree.
    assert scores["accuracy"] == 3 / 5


def test_entity_scores_i_after_o_and_boundary_error():
    # Gold ORG 1-2 (I- after O); predicted ORG 1 and ORG 2 (split by B-).
    scores = entity_scores([["O", "I-ORG", "I-ORG"]], [["O", "I-ORG", "B-ORG"]])
    assert scores["num_gold"] == 1
    assert scores["num_predicted"] == 2
    assert scores["num_correct"] == 0
    assert scores["f1"] == 0.0
    assert scores["accuracy"] == 2 / 3


def test_entity_scores_empty_prediction_set():
    gold = [["B-PER", "O"], ["O", "B-LOC"]]
    scores = entity_scores(gold, [["O", "O"], ["O", "O"]])
    # Precision 0/0 is undefined: 0.0, as seqeval with zero_division=0.
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0, 0, 0)
    assert scores["accuracy"] == 2 / 4
    assert scores["per_type"]["PER"]["support"] == 1
    assert scores["per_type"]["PER"]["num_predicted"] == 0


def test_entity_scores_no_entities_at_all():
    scores = entity_scores([["O"], []], [["O"], []])
    assert scores == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "num_gold": 0,
        "num_predicted": 0, "num_correct": 0, "accuracy": 1.0,
        "per_type": {},
    }  # fmt: skip
    assert entity_scores([], [])["accuracy"] == 0.0


def test_entity_scores_checks_lengths_and_tags():
    with pytest.raises(ValueError, match=r"Sentence 1 has 2 gold tags but 1"):
        entity_scores([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match=r"2 gold and 1 predicted sentences"):
        entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(
        ValueError, match=r"predicted sentence 0: Invalid tag '\[PAD\]'"
    ):
        entity_scores([["O"]], [["[PAD]"]])


# === Parity with seqeval ===


def random_tags(rng, length):
    """Any mix of B/I/E/S/O and types: I- after O, switches, E-, S-."""
    tags = []
    for _ in range(length):
        prefix = rng.choice("BIESOOO")
        tags.append("O" if prefix == "O" else f"{prefix}-{rng.choice(TYPES)}")
    return tags


def perturb(rng, tags, rate=0.15):
    """`tags` with some boundaries, types and entities changed."""
    tags = list(tags)
    for index, tag in enumerate(tags):
        if rng.random() >= rate:
            continue
        change = rng.randrange(4)
        if tag == "O" or change == 0:  # add, or shift a boundary out
            tags[index] = f"{rng.choice('BI')}-{rng.choice(TYPES[:3])}"
        elif change == 1:  # drop, or shift a boundary in
            tags[index] = "O"
        elif change == 2:  # change the type
            tags[index] = f"{tag[0]}-{rng.choice(TYPES[:3])}"
        else:  # split or merge
            tags[index] = ("I-" if tag[0] == "B" else "B-") + tag[2:]
    return tags


def assert_same_as_seqeval(gold, predicted):
    for sentence in [*gold, *predicted]:
        assert get_entities(sentence) == seqeval_entities(sentence)
    scores = entity_scores(gold, predicted)
    options = {"zero_division": 0}
    expected = {
        "precision": seqeval_metrics.precision_score(
            gold, predicted, **options
        ),
        "recall": seqeval_metrics.recall_score(gold, predicted, **options),
        "f1": seqeval_metrics.f1_score(gold, predicted, **options),
        "accuracy": seqeval_metrics.accuracy_score(gold, predicted),
    }
    for name, value in expected.items():
        assert scores[name] == pytest.approx(value, abs=TOLERANCE), name
    report = seqeval_metrics.classification_report(
        gold, predicted, output_dict=True, **options
    )
    assert report["micro avg"]["support"] == scores["num_gold"]
    types = sorted(set(report) - {"micro avg", "macro avg", "weighted avg"})
    assert list(scores["per_type"]) == types
    for entity_type, type_scores in scores["per_type"].items():
        reference = report[entity_type]
        assert type_scores["support"] == reference["support"]
        for name, reference_name in [
            ("precision", "precision"),
            ("recall", "recall"),
            ("f1", "f1-score"),
        ]:
            assert type_scores[name] == pytest.approx(
                reference[reference_name], abs=TOLERANCE
            ), (entity_type, name)
    return scores


@pytest.mark.parametrize("seed", range(3))
def test_parity_on_random_sequences(seed):
    rng = random.Random(seed)
    gold = [random_tags(rng, rng.randrange(0, 15)) for _ in range(2000)]
    # Half independent, half a perturbed gold (so that many match).
    predicted = [
        random_tags(rng, len(g)) if i % 2 else perturb(rng, g, rate=0.3)
        for i, g in enumerate(gold)
    ]
    scores = assert_same_as_seqeval(gold, predicted)
    assert 0 < scores["num_correct"] < scores["num_gold"]
    assert len(scores["per_type"]) == len(TYPES)


@functools.lru_cache(maxsize=None)
def conll_valid(target_scheme):
    path = shared_path("conll2003", "valid.txt")
    return read_conll(path, target_scheme=target_scheme)["tags"]


@pytest.mark.parametrize("target_scheme", ["iob1", "iob2", "iobes"])
def test_parity_on_conll_valid(target_scheme):
    gold = conll_valid(target_scheme)
    rng = random.Random(2003)
    predicted = [perturb(rng, tags) for tags in gold]
    scores = assert_same_as_seqeval(gold, predicted)
    assert scores["num_gold"] == 5942  # CoNLL-2003 valid's entities
    assert 0.5 < scores["f1"] < 0.95
    # Perfect predictions score 1.
    assert entity_scores(gold, gold)["f1"] == 1.0


def test_scores_do_not_depend_on_the_scheme():
    rng = random.Random(7)
    gold = conll_valid("iob1")
    predicted = [perturb(rng, tags) for tags in gold]
    iob1 = entity_scores(gold, predicted)
    # Converting both sides keeps every entity, so only accuracy moves.
    iob2 = entity_scores(
        [convert_tags(tags, "iob1", "iob2") for tags in gold],
        [convert_tags(tags, "iob1", "iob2") for tags in predicted],
    )
    del iob1["accuracy"], iob2["accuracy"]
    assert iob1 == iob2


# Predicted tags of real fine-tuned models on the validation files, written
# by `benchmarks/task_race.py --task=ner` at commit 193fb03 (seed 0 of each
# contestant).
REAL_PREDICTIONS = {
    "conll2003": "valid.txt",
    "wnut17": "emerging.dev.conll",
}
BENCHMARK_DIR = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "benchmarks", "ner"
)


def real_prediction_runs():
    if not os.path.isdir(BENCHMARK_DIR):
        return []  # test_there_are_real_predictions_... fails then
    runs = sorted(
        name[: -len("_predicted.txt.gz")]
        for name in os.listdir(BENCHMARK_DIR)
        if name.endswith("_predicted.txt.gz")
    )
    return runs


@pytest.mark.parametrize("run", real_prediction_runs())
def test_parity_on_real_model_predictions(run):
    dataset = run.split("_")[0]
    gold = read_conll(shared_path(dataset, REAL_PREDICTIONS[dataset]))["tags"]
    with gzip.open(
        os.path.join(BENCHMARK_DIR, f"{run}_predicted.txt.gz"), "rt"
    ) as file:
        predicted = [line.split() for line in file.read().splitlines()]
    scores = assert_same_as_seqeval(gold, predicted)
    with open(os.path.join(BENCHMARK_DIR, f"{run}.json")) as file:
        reported = json.load(file)["metrics"]
    assert scores["f1"] == pytest.approx(reported["f1"], abs=1e-12)
    assert 0.3 < scores["f1"] < 0.95  # a trained model, not a toy


def test_there_are_real_predictions_of_both_datasets():
    runs = real_prediction_runs()
    assert {run.split("_")[0] for run in runs} == set(REAL_PREDICTIONS)
