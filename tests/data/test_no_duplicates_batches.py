"""`no_duplicates_batches` / `no_duplicates_epochs`: no text twice in a
batch, every example once, sentence-transformers' order, resumable."""

import numpy as np
import pytest

from keras_bert.data import no_duplicates_batches
from keras_bert.data import no_duplicates_epochs

# Five questions on paragraph "p", the others on their own paragraphs.
TEXTS = [(f"q{i}", "p" if i < 5 else f"r{i}") for i in range(12)]


def _assert_valid(batches, texts, batch_size):
    assert sorted(i for batch in batches for i in batch) == list(
        range(len(texts))
    )
    for batch in batches:
        assert 0 < len(batch) <= batch_size
        values = [text for i in batch for text in texts[i]]
        assert len(values) == len(set(values)), batch


def test_no_text_twice_and_every_example_once():
    for seed in range(5):
        batches = no_duplicates_batches(TEXTS, batch_size=4, seed=seed)
        _assert_valid(batches, TEXTS, 4)
        # At most one of the five "p" questions per batch.
        assert len(batches) >= 5


def test_a_text_clashing_across_columns_waits():
    texts = [("a", "b"), ("b", "c"), ("d", "e")]
    batches = no_duplicates_batches(texts, batch_size=3, seed=0)
    _assert_valid(batches, texts, 3)
    assert not any({0, 1} <= set(batch) for batch in batches)


def test_the_same_seed_the_same_batches():
    assert no_duplicates_batches(TEXTS, 4, seed=3) == no_duplicates_batches(
        TEXTS, 4, seed=3
    )
    assert no_duplicates_batches(TEXTS, 4, seed=3) != no_duplicates_batches(
        TEXTS, 4, seed=4
    )


@pytest.mark.slow
def test_equals_sentence_transformers_sampler_on_the_same_shuffle(monkeypatch):
    """Given the same shuffled order, sentence-transformers'
    `NoDuplicatesBatchSampler` makes the same batches."""
    torch = pytest.importorskip("torch")
    datasets = pytest.importorskip("datasets")
    sampler_module = pytest.importorskip("sentence_transformers.base.sampler")
    rng = np.random.default_rng(0)
    texts = [
        (f"q{i}", f"p{rng.integers(0, 9)}") for i in range(40)
    ]  # many clashes
    order = np.random.default_rng(7).permutation(len(texts))
    monkeypatch.setattr(
        sampler_module.torch,
        "randperm",
        lambda n, **kwargs: torch.tensor(order, dtype=kwargs.get("dtype")),
    )
    dataset = datasets.Dataset.from_dict(
        {"anchor": [a for a, _ in texts], "positive": [p for _, p in texts]}
    )
    sampler = sampler_module.NoDuplicatesBatchSampler(
        dataset, batch_size=6, drop_last=False
    )
    expected = list(sampler._iter_one_pass(*_sampler_checks(sampler)))
    assert no_duplicates_batches(texts, 6, seed=7) == expected


def _sampler_checks(sampler):
    """The sampler's (get values, overlap) pair for its plain path."""

    def get_sample_values(index):
        return {str(value) for value in sampler.dataset[index].values()}

    def has_overlap(values, batch_values):
        return not values.isdisjoint(batch_values)

    return get_sample_values, has_overlap


def test_epochs_have_ceil_steps_and_resume_exactly():
    features = {"ids": np.arange(len(TEXTS))}
    full = [
        batch["ids"].numpy().tolist()
        for batch in no_duplicates_epochs(features, TEXTS, 4, 1, 0, 3)
    ]
    assert len(full) == 3 * 3  # ceil(12 / 4) batches an epoch
    resumed = [
        batch["ids"].numpy().tolist()
        for batch in no_duplicates_epochs(features, TEXTS, 4, 1, 1, 3)
    ]
    assert resumed == full[3:]
    for batch in full:
        values = [text for i in batch for text in TEXTS[i]]
        assert len(values) == len(set(values))


def test_epochs_gather_every_feature():
    features = {"a": np.arange(12) * 10, "b": {"c": np.arange(12)[:, None]}}
    batch = next(iter(no_duplicates_epochs(features, TEXTS, 4, 0, 0, 1)))
    np.testing.assert_array_equal(
        batch["a"].numpy(), batch["b"]["c"][:, 0] * 10
    )


@pytest.mark.parametrize("batch_size", [0, -2, 2.0, True])
def test_rejects_a_bad_batch_size(batch_size):
    with pytest.raises(ValueError, match=f"batch_size={batch_size!r}"):
        no_duplicates_batches(TEXTS, batch_size)


def test_rejects_features_of_another_length():
    with pytest.raises(
        ValueError, match=r"one row per text tuple \(12\).*\(3,\)"
    ):
        no_duplicates_epochs({"ids": np.arange(3)}, TEXTS, 4, 0, 0, 1)


def test_rejects_a_first_epoch_out_of_range():
    with pytest.raises(ValueError, match="first_epoch=2, num_epochs=2"):
        no_duplicates_epochs({"ids": np.arange(12)}, TEXTS, 4, 0, 2, 2)
