"""`augment_texts`: edited variants of texts for the teacher to label."""

import pytest

from keras_bert.distillation.augment import augment_texts

TEXTS = [
    "a gripping , funny and moving film",
    "the plot is dull and the acting worse",
    "superb",
    "one of the year 's best",
]


def _is_run_of(variant, words):
    return any(
        words[start : start + len(variant)] == variant
        for start in range(len(words))
    )


def _is_subsequence(variant, words):
    remaining = iter(words)
    return all(word in remaining for word in variant)


def test_every_variant_is_one_edit_of_its_text():
    variants = augment_texts(TEXTS, copies=20, seed=0)
    vocabulary = {word for text in TEXTS for word in text.split()}
    sources = [t for t in TEXTS if len(t.split()) > 1 for _ in range(20)]
    kinds = set()
    position = 0
    for text in sources:  # variants come text by text, in order
        words = text.split()
        if position == len(variants):
            break
        variant = variants[position].split()
        if len(variant) == len(words) and variant != words:
            assert set(variant) <= vocabulary  # replaced words
            kinds.add("replace")
        elif _is_run_of(variant, words) and len(variant) >= len(words) // 2:
            kinds.add("crop or delete")
        elif _is_subsequence(variant, words):
            kinds.add("delete")
        else:
            continue  # this copy of `text` was dropped (unchanged)
        assert variant != words
        position += 1
    assert position == len(variants)  # each variant matched its text
    assert kinds == {"replace", "crop or delete", "delete"}
    assert not any(v.split() == ["superb"] for v in variants)  # one word


def test_seeded_and_bounded():
    first = augment_texts(TEXTS, copies=4, seed=3)
    assert first == augment_texts(TEXTS, copies=4, seed=3)
    assert first != augment_texts(TEXTS, copies=4, seed=4)
    assert 0 < len(first) <= 3 * 4  # "superb" gives none
    assert augment_texts(TEXTS, copies=0) == []


def test_pairs_stay_aligned():
    a, b = augment_texts((TEXTS, TEXTS[::-1]), copies=3, seed=0)
    assert len(a) == len(b) > 0
    assert all(isinstance(text, str) for text in a + b)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"copies": -1}, "copies=-1"),
        ({"copies": 2.0}, "copies=2.0"),
        ({"copies": 2, "word_rate": 1.5}, "word_rate"),
    ],
)
def test_bad_arguments_name_the_value(arguments, message):
    with pytest.raises(ValueError, match=message):
        augment_texts(TEXTS, **arguments)
