"""Statistics and invariants of instance creation on a real corpus.

12,000 instances from the Python 3.11 library docs (about 3 s to make),
checked against the properties BERT's data must have.
"""

import functools
import random

import numpy as np
import pytest

from keras_bert.data import PretrainingInstanceCreator
from keras_bert.data import read_documents
from keras_bert.data.pretraining_instance_creator import _truncation
from tests.data import pretraining_helpers as helpers


@functools.lru_cache(maxsize=None)
def document_streams():
    """WordPiece streams of the usable documents, tokenized independently."""
    tokenizer = helpers.real_tokenizer()
    documents = list(read_documents(helpers.python_doc_files(), "text"))
    lines = [sentence for document in documents for sentence in document]
    ids = []
    for start in range(0, len(lines), 1024):  # bounded memory
        ids.extend(tokenizer(lines[start : start + 1024]).to_list())
    streams, cursor = [], 0
    for document in documents:
        sentences = [s for s in ids[cursor : cursor + len(document)] if s]
        cursor += len(document)
        if len(sentences) >= 2:
            streams.append([t for s in sentences for t in s])
    return streams


def split_pair(instance, creator):
    """Restores the unmasked tokens and splits them into A and B."""
    tokens = list(instance.token_ids)
    for position, label in zip(
        instance.masked_lm_positions, instance.masked_lm_ids
    ):
        tokens[position] = label
    first_sep = tokens.index(creator.tokenizer.sep_token_id)
    return tokens[1:first_sep], tokens[first_sep + 1 : -1]


def maskable_count(instance):
    return len(instance.token_ids) - 3  # all but [CLS] and two [SEP]s


@pytest.mark.slow  # tens of seconds on two cores
def test_at_least_ten_thousand_instances():
    instances, _ = helpers.real_instances()
    assert len(instances) >= 10_000


def test_masked_fraction_is_fifteen_percent_of_maskable_tokens():
    instances, _ = helpers.real_instances()
    masked = sum(len(i.masked_lm_positions) for i in instances)
    maskable = sum(maskable_count(i) for i in instances)
    assert abs(masked / maskable - 0.15) < 0.005, masked / maskable


def test_eighty_ten_ten_among_masked():
    instances, creator = helpers.real_instances()
    mask_id = creator.tokenizer.mask_token_id
    counts = {"mask": 0, "random": 0, "same": 0}
    for instance in instances:
        for position, label in zip(
            instance.masked_lm_positions, instance.masked_lm_ids
        ):
            token = instance.token_ids[position]
            if token == mask_id:
                counts["mask"] += 1
            elif token == label:
                counts["same"] += 1  # includes a random draw of itself
            else:
                counts["random"] += 1
    total = sum(counts.values())
    assert total > 100_000
    assert abs(counts["mask"] / total - 0.8) < 0.015, counts
    assert abs(counts["random"] / total - 0.1) < 0.015, counts
    assert abs(counts["same"] / total - 0.1) < 0.015, counts


def test_next_sentence_positives_are_half():
    instances, _ = helpers.real_instances()
    positives = np.mean([not i.is_random_next for i in instances])
    assert abs(positives - 0.5) < 0.02, positives


def test_special_tokens_are_never_masked_and_layout_is_right():
    instances, creator = helpers.real_instances()
    cls_id = creator.tokenizer.cls_token_id
    sep_id = creator.tokenizer.sep_token_id
    for instance in instances:
        tokens = instance.token_ids
        assert tokens[0] == cls_id and tokens[-1] == sep_id
        assert len(tokens) <= creator.max_seq_length
        assert len(instance.masked_lm_positions) <= 20
        separators = [p for p, t in enumerate(tokens) if t == sep_id]
        segment_b_start = instance.segment_ids.index(1)
        assert separators[0] == segment_b_start - 1
        for position in instance.masked_lm_positions:
            assert position not in (0, segment_b_start - 1, len(tokens) - 1)
            assert instance.masked_lm_ids[
                instance.masked_lm_positions.index(position)
            ] not in (cls_id, sep_id, creator.tokenizer.pad_token_id)
        assert list(instance.masked_lm_positions) == sorted(
            set(instance.masked_lm_positions)
        )


def test_positive_b_is_the_true_continuation_of_a():
    instances, creator = helpers.real_instances()
    streams = document_streams()
    positives = [i for i in instances if not i.is_random_next]
    for instance in positives:
        tokens_a, tokens_b = split_pair(instance, creator)
        assert instance.b_document == instance.a_document
        stream = streams[instance.a_document]
        a_start, a_end = instance.a_span
        assert tokens_a == stream[a_start:a_end]
        assert instance.b_span[0] == a_end
        assert tokens_b == stream[a_end : a_end + len(tokens_b)]
        assert tokens_a and tokens_b


def test_negative_b_comes_from_another_document():
    instances, creator = helpers.real_instances()
    streams = document_streams()
    negatives = [i for i in instances if i.is_random_next]
    for instance in negatives:
        tokens_a, tokens_b = split_pair(instance, creator)
        assert instance.b_document != instance.a_document
        a_start, a_end = instance.a_span
        b_start, b_end = instance.b_span
        assert tokens_a == streams[instance.a_document][a_start:a_end]
        assert tokens_b == streams[instance.b_document][b_start:b_end]
        assert tokens_a and tokens_b


def test_whole_word_masking_never_splits_a_word():
    instances, creator = helpers.real_instances(do_whole_word_mask=True)
    vocabulary = creator.tokenizer.vocabulary
    cls_id = creator.tokenizer.cls_token_id
    sep_id = creator.tokenizer.sep_token_id
    continued = 0
    for instance in instances:
        tokens, _ = list(instance.token_ids), None
        for position, label in zip(
            instance.masked_lm_positions, instance.masked_lm_ids
        ):
            tokens[position] = label
        masked = set(instance.masked_lm_positions)
        for position in range(1, len(tokens)):
            is_piece = vocabulary[tokens[position]].startswith("##")
            joined = tokens[position - 1] not in (cls_id, sep_id)
            if is_piece and joined:
                # A continuation is masked exactly when its word start is.
                assert (position in masked) == (position - 1 in masked)
                continued += position in masked
    assert continued > 1000  # multi-piece words were masked, whole


def test_whole_word_masking_keeps_the_fraction_close():
    instances, _ = helpers.real_instances(do_whole_word_mask=True)
    masked = sum(len(i.masked_lm_positions) for i in instances)
    maskable = sum(maskable_count(i) for i in instances)
    assert 0.14 < masked / maskable <= 0.15 + 0.005


def test_same_seed_same_instances_and_other_seed_differs():
    files = helpers.python_doc_files()[:15]
    tokenizer = helpers.real_tokenizer()

    def make(seed):
        creator = PretrainingInstanceCreator(
            tokenizer, dupe_factor=2, random_seed=seed
        )
        return list(creator.create_instances(read_documents(files, "text")))

    first = make(7)
    assert first == make(7)
    assert first != make(8)


def test_documents_are_streamed_in_chunks():
    """Random B spans stay within a chunk of documents_per_chunk documents,
    and the input is consumed lazily."""
    tokenizer = helpers.synthetic_tokenizer()
    consumed = []

    def documents():
        rng = random.Random(0)
        for index in range(40):
            consumed.append(index)
            yield [
                " ".join(rng.choices(["cat", "dog", "sat"], k=5)) + " ."
                for _ in range(4)
            ]

    creator = PretrainingInstanceCreator(
        tokenizer, max_seq_length=16, dupe_factor=1, documents_per_chunk=10
    )
    stream = creator.create_instances(documents())
    next(stream)
    assert len(consumed) == 20  # one chunk made, one more buffered
    instances = [next(stream)] + list(stream)
    for instance in instances:
        assert instance.a_document // 10 == instance.b_document // 10 or (
            instance.a_document >= 30 and instance.b_document >= 30
        )


@pytest.mark.parametrize(
    "argument, value",
    [
        ("max_seq_length", 4),
        ("max_predictions_per_seq", 0),
        ("masked_lm_prob", 1.5),
        ("short_seq_prob", -0.1),
        ("dupe_factor", 0),
        ("documents_per_chunk", 1),
    ],
)
def test_invalid_arguments_name_the_value(argument, value):
    with pytest.raises(ValueError, match=f"{argument}={value!r}"):
        PretrainingInstanceCreator(
            helpers.synthetic_tokenizer(), **{argument: value}
        )


def test_truncation_matches_bert_loop():
    """The closed form equals the original one-token-at-a-time loop."""
    for length_a in range(0, 30):
        for length_b in range(0, 30):
            for max_tokens in range(2, 25):
                a, b = length_a, length_b
                while a + b > max_tokens:
                    if a > b:
                        a -= 1
                    else:
                        b -= 1
                assert _truncation(length_a, length_b, max_tokens) == (
                    length_a - a,
                    length_b - b,
                )
