"""NER windows and labels: parity with Hugging Face's `run_ner.py`.

The reference for the real data is Hugging Face's fast tokenizer called on
pre-split words (`is_split_into_words=True`) and labelled from `word_ids()`
as `run_ner.py`'s `tokenize_and_align_labels` does (ported below), on every
sentence of the real CoNLL-2003 validation file. The windows of long
sentences are checked against `run_squad.py`'s `_DocSpan` loop and
`_check_is_max_context` (ported below) on random sentences of a tiny
vocabulary. Everything is compared exactly (integers).
"""

import math
import os

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.fine_tuning.ner.conll import label_list
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.training.losses import IGNORED_LABEL
from keras_bert.training.ner_features import check_window_arguments
from keras_bert.training.ner_features import default_stride
from keras_bert.training.ner_features import make_windows
from keras_bert.training.ner_features import ner_features
from keras_bert.training.ner_features import word_predictions
from tests.fine_tuning.ner.data import shared_path
from tests.text import references

# CoNLL-2003 valid: sentences that fit 128 positions with Hugging Face's
# tokenization ([CLS] and [SEP] included), and those that do not.
VALID_SENTENCES = 3250
VALID_LONG = 3

# Words of the tiny vocabulary (`references.TINY_VOCABULARY`) that make 0 to
# 12 tokens each: "abbb" is a ##b ##b ##b, "日本" two CJK tokens, "xyz"
# [UNK], "\u200b" and "\x00" nothing (BERT's text cleaning drops them).
TINY_WORDS = [
    "the", "quick", "brown", "fox", "foxes", "a", "ab", "abbb", "jumped",
    "over", "lazy", "dog", ".", "fox.", "dog!", "xyz", "日本", "é", "Fox",
    "\u200b", "\x00", "a" + "b" * 11,
]  # fmt: skip
# (sequence_length, stride): stride 1, stride == sequence_length - 2 (windows
# that touch), the default, and one position of room.
WINDOW_SIZES = [(8, 1), (8, 3), (8, 6), (12, 5), (12, 10), (16, 7), (3, 1)]


@pytest.fixture(scope="module")
def tokenizer():
    return keras_bert.BertTokenizer(references.minilm_vocab_path())


@pytest.fixture(scope="module")
def hugging_face():
    transformers = pytest.importorskip(
        "transformers", reason="needs the reference: pip install transformers"
    )
    directory = os.path.dirname(references.minilm_vocab_path())
    return transformers.BertTokenizerFast.from_pretrained(directory)


@pytest.fixture(scope="module")
def tiny_tokenizer():
    return keras_bert.BertTokenizer(references.TINY_VOCABULARY)


@pytest.fixture(scope="module")
def valid():
    data = read_conll(shared_path("conll2003", "valid.txt"))
    labels = label_list(data["tags"])
    label_ids = [[labels.index(tag) for tag in tags] for tags in data["tags"]]
    return data["words"], label_ids, labels


# --- The references -------------------------------------------------------


def run_ner_labels(word_ids, word_labels, label_all_tokens, b_to_i_label):
    """`run_ner.py`'s `tokenize_and_align_labels` for one sentence."""
    previous_word_idx = None
    label_ids = []
    for word_idx in word_ids:
        if word_idx is None:
            label_ids.append(-100)
        elif word_idx != previous_word_idx:
            label_ids.append(word_labels[word_idx])
        else:
            if label_all_tokens:
                label_ids.append(b_to_i_label[word_labels[word_idx]])
            else:
                label_ids.append(-100)
        previous_word_idx = word_idx
    return label_ids


def run_ner_b_to_i(label_list_):
    """`run_ner.py`'s `b_to_i_label`: each label's id on later sub-tokens."""
    b_to_i_label = []
    for idx, label in enumerate(label_list_):
        if label.startswith("B-") and label.replace("B-", "I-") in label_list_:
            b_to_i_label.append(label_list_.index(label.replace("B-", "I-")))
        else:
            b_to_i_label.append(idx)
    return b_to_i_label


def run_squad_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """`run_squad.py`'s windows: `(start, length)` in tokens."""
    spans, start = [], 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def max_context_span(doc_spans, position):
    """The span `run_squad.py`'s `_check_is_max_context` is true for."""
    best_score, best_span_index = None, None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        num_left_context = position - start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return best_span_index


def pieces_of(tokenizer, words):
    """Each word's token ids, tokenized on its own (list of lists)."""
    if not words:
        return []
    return tokenizer(tf.constant(words)).to_list()


def assert_windows_match_run_squad(features, rows, pieces, sizes, context):
    """Layout, `token_index`/`word_index`, `first_token`, `predict`.

    `rows`: the windows of one sentence whose words have `pieces`.
    """
    sequence_length, stride = sizes
    room = sequence_length - 2
    tokens = [t for word in pieces for t in word]
    word_of_token = [w for w, word in enumerate(pieces) for _ in word]
    first_of_word = {}
    for index, word in enumerate(word_of_token):
        first_of_word.setdefault(word, index)
    spans = run_squad_doc_spans(len(tokens), room, stride) or [(0, 0)]
    assert len(rows) == len(spans), context
    predicted = {}
    for window, (row, (start, length)) in enumerate(zip(rows, spans)):
        where = f"{context}, window {window}"
        token_ids = features["token_ids"][row]
        token_index = features["token_index"][row]
        word_index = features["word_index"][row]
        first_token = features["first_token"][row]
        predict = features["predict"][row]
        # [CLS] window [SEP] padding; windows start every `stride` tokens.
        assert start == window * stride, where
        expected_ids = [2] + tokens[start : start + length] + [3]
        expected_ids += [0] * (sequence_length - len(expected_ids))
        np.testing.assert_array_equal(token_ids, expected_ids, err_msg=where)
        np.testing.assert_array_equal(
            features["padding_mask"][row],
            np.arange(sequence_length) < length + 2,
            err_msg=where,
        )
        np.testing.assert_array_equal(
            features["segment_ids"][row], 0, err_msg=where
        )
        on = np.zeros(sequence_length, bool)
        on[1 : length + 1] = True
        expected_index = np.where(
            on, np.arange(sequence_length) - 1 + start, -1
        )
        np.testing.assert_array_equal(
            token_index, expected_index, err_msg=where
        )
        for position in range(sequence_length):
            t = token_index[position]
            if t < 0:
                assert word_index[position] == -1, where
                assert first_token[position] == 0, where
                assert predict[position] == 0, where
                continue
            word = word_of_token[t]
            assert word_index[position] == word, where
            is_first = first_of_word[word] == t
            assert first_token[position] == is_first, (where, position)
            best = max_context_span(spans, t)
            expected_predict = is_first and best == window
            assert predict[position] == expected_predict, (where, position)
            if predict[position]:
                assert word not in predicted, (where, word)
                predicted[word] = window
    # Every word with a token is predicted exactly once.
    assert sorted(predicted) == sorted(first_of_word), context
    return predicted


def windows_of(tokenizer, sentences, label_ids, sequence_length, **options):
    """`make_windows` (eager) as numpy arrays."""
    windows = make_windows(
        tokenizer,
        tf.ragged.constant(sentences, dtype=tf.string),
        tf.ragged.constant(label_ids, dtype=tf.int64),
        sequence_length=sequence_length,
        **options,
    )
    return {name: value.numpy() for name, value in windows.items()}


def random_sentence(rng, max_words):
    num_words = int(rng.integers(0, max_words + 1))
    return [str(w) for w in rng.choice(TINY_WORDS, num_words)]


# --- The real data: parity with run_ner.py --------------------------------


@pytest.mark.parametrize(
    "label_all_tokens",
    [False, pytest.param(True, marks=pytest.mark.slow)],
)
def test_every_valid_sentence_matches_run_ner(
    tokenizer, hugging_face, valid, label_all_tokens
):
    words, label_ids, labels = valid
    assert len(words) == VALID_SENTENCES
    b_to_i_label = run_ner_b_to_i(labels)
    assert b_to_i_label != list(range(len(labels)))  # B- -> I- does happen
    features = ner_features(
        tokenizer,
        words,
        label_ids,
        sequence_length=128,
        label_all_tokens=label_all_tokens,
        continuation_label_ids=b_to_i_label if label_all_tokens else None,
    )
    encoding = hugging_face(words, is_split_into_words=True)
    example_index = features["example_index"]
    assert (np.diff(example_index) >= 0).all()
    row_starts = np.searchsorted(example_index, np.arange(len(words) + 1))
    stride = default_stride(128)
    fitting, long = 0, 0
    for index in range(len(words)):
        expected_ids = encoding["input_ids"][index]
        word_ids = encoding.word_ids(index)
        expected_labels = run_ner_labels(
            word_ids, label_ids[index], label_all_tokens, b_to_i_label
        )
        rows = range(row_starts[index], row_starts[index + 1])
        context = f"sentence {index}: {words[index]}"
        n = len(expected_ids)
        if n <= 128:
            fitting += 1
            assert len(rows) == 1, context
            row = rows[0]
            np.testing.assert_array_equal(
                features["token_ids"][row, :n], expected_ids, err_msg=context
            )
            np.testing.assert_array_equal(
                features["token_ids"][row, n:], 0, err_msg=context
            )
            assert features["padding_mask"][row].sum() == n, context
            np.testing.assert_array_equal(
                features["labels"][row, :n], expected_labels, err_msg=context
            )
            np.testing.assert_array_equal(
                features["labels"][row, n:], IGNORED_LABEL, err_msg=context
            )
            # One window: every word predicted on its first sub-token.
            first = [
                w is not None and (i == 0 or word_ids[i - 1] != w)
                for i, w in enumerate(word_ids)
            ]
            np.testing.assert_array_equal(
                features["predict"][row, :n], first, err_msg=context
            )
            np.testing.assert_array_equal(
                features["first_token"][row, :n], first, err_msg=context
            )
            continue
        long += 1
        # Hugging Face's untruncated tokens, without [CLS] and [SEP].
        tokens = np.array(expected_ids[1:-1])
        token_labels = np.array(expected_labels[1:-1])
        token_words = np.array(word_ids[1:-1])
        assert len(rows) == 1 + math.ceil((len(tokens) - 126) / stride)
        spans = run_squad_doc_spans(len(tokens), 126, stride)
        assert len(spans) == len(rows), context
        parts, predicted = [], []
        for window, row in enumerate(rows):
            token_index = features["token_index"][row]
            start, end = window * stride, (window + 1) * stride
            if window == len(rows) - 1:
                end = len(tokens)
            own = (token_index >= start) & (token_index < end)
            parts.append(features["token_ids"][row][own])
            on = token_index >= 0
            # Every position of every window: run_ner.py's label and word.
            np.testing.assert_array_equal(
                features["token_ids"][row][on],
                tokens[token_index[on]],
                err_msg=context,
            )
            np.testing.assert_array_equal(
                features["labels"][row][on],
                token_labels[token_index[on]],
                err_msg=context,
            )
            np.testing.assert_array_equal(
                features["word_index"][row][on],
                token_words[token_index[on]],
                err_msg=context,
            )
            predict = features["predict"][row] > 0
            predicted += list(features["word_index"][row][predict])
            for t in token_index[predict]:  # run_squad.py's max context
                assert max_context_span(spans, t) == window, context
        np.testing.assert_array_equal(
            np.concatenate(parts), tokens, err_msg=context
        )
        assert sorted(predicted) == sorted(set(token_words)), context
    assert (fitting, long) == (VALID_SENTENCES - VALID_LONG, VALID_LONG)
    assert row_starts[-1] == len(example_index)


# --- Windows on random sentences ------------------------------------------


@pytest.mark.parametrize("sizes", WINDOW_SIZES)
def test_windows_and_max_context_match_run_squad(tiny_tokenizer, sizes):
    sequence_length, stride = sizes
    rng = np.random.default_rng(sequence_length * 100 + stride)
    sentences = [random_sentence(rng, 40) for _ in range(30)]
    sentences += [[], ["\u200b"], ["a" + "b" * 11] * 3]
    label_ids = [list(rng.integers(0, 5, len(s))) for s in sentences]
    features = windows_of(
        tiny_tokenizer, sentences, label_ids, sequence_length, stride=stride
    )
    row = 0
    multi_window = 0
    for index, sentence in enumerate(sentences):
        pieces = pieces_of(tiny_tokenizer, sentence)
        num_rows = len(
            run_squad_doc_spans(
                sum(map(len, pieces)), sequence_length - 2, stride
            )
            or [(0, 0)]
        )
        rows = list(range(row, row + num_rows))
        np.testing.assert_array_equal(features["example_index"][rows], index)
        assert_windows_match_run_squad(
            features, rows, pieces, sizes, f"sentence {index} {sentence}"
        )
        # Labels on first sub-tokens, in every window holding them.
        for r in rows:
            for position in range(sequence_length):
                expected = IGNORED_LABEL
                if features["first_token"][r, position]:
                    word = features["word_index"][r, position]
                    expected = label_ids[index][word]
                assert features["labels"][r, position] == expected
        multi_window += num_rows > 1
        row += num_rows
    assert row == len(features["example_index"])
    assert multi_window >= 10  # the random sentences do need windows


def test_ner_features_equals_make_windows_across_batches(tiny_tokenizer):
    rng = np.random.default_rng(7)
    sentences = [random_sentence(rng, 30) for _ in range(25)]
    label_ids = [list(rng.integers(0, 5, len(s))) for s in sentences]
    features = ner_features(
        tiny_tokenizer,
        sentences,
        label_ids,
        sequence_length=8,
        stride=3,
        batch_size=4,
    )
    windows = make_windows(
        tiny_tokenizer,
        tf.ragged.constant(sentences, dtype=tf.string),
        tf.ragged.constant(label_ids, dtype=tf.int64),
        sequence_length=8,
        stride=3,
    )
    assert sorted(features) == sorted(windows)
    for name, value in windows.items():
        assert features[name].dtype == np.int32, name
        np.testing.assert_array_equal(features[name], value, err_msg=name)


@pytest.mark.slow  # tens of seconds on two cores
def test_a_ten_thousand_word_sentence(tiny_tokenizer):
    rng = np.random.default_rng(10_000)
    sentence = [str(w) for w in rng.choice(TINY_WORDS, 10_000)]
    sequence_length = 32
    stride = default_stride(sequence_length)
    features = ner_features(
        tiny_tokenizer, [sentence], sequence_length=sequence_length
    )
    pieces = pieces_of(tiny_tokenizer, sentence)
    tokens = np.array([t for word in pieces for t in word])
    word_of_token = np.array([w for w, word in enumerate(pieces) for _ in word])
    with_tokens = sorted(set(word_of_token))
    assert len(with_tokens) < 10_000  # some words make no token
    num_windows = 1 + math.ceil((len(tokens) - (sequence_length - 2)) / stride)
    assert len(features["example_index"]) == num_windows
    np.testing.assert_array_equal(features["example_index"], 0)
    # The windows' own parts put the sentence's tokens back together.
    parts = []
    for window in range(num_windows):
        token_index = features["token_index"][window]
        assert token_index[1] == window * stride
        end = (window + 1) * stride if window < num_windows - 1 else len(tokens)
        own = (token_index >= window * stride) & (token_index < end)
        parts.append(features["token_ids"][window][own])
    np.testing.assert_array_equal(np.concatenate(parts), tokens)
    predict = features["predict"] > 0
    predicted = features["word_index"][predict]
    np.testing.assert_array_equal(np.sort(predicted), with_tokens)
    # Each from run_squad.py's max-context window (only nearby spans hold
    # a token, so only those are scored).
    spans = run_squad_doc_spans(len(tokens), sequence_length - 2, stride)
    windows, positions = np.nonzero(predict)
    for window, position in zip(windows, positions):
        t = features["token_index"][window, position]
        nearby = range(max(window - 3, 0), min(window + 4, len(spans)))
        best = max_context_span([spans[w] for w in nearby], t)
        assert nearby[best] == window
    # Every word's predicted label reads back.
    logits = np.random.default_rng(0).normal(
        size=features["token_ids"].shape + (3,)
    )
    labels, scores = word_predictions(features, logits, [10_000], 0)
    assert len(labels[0]) == 10_000 and len(scores[0]) == 10_000


# --- Edge cases -----------------------------------------------------------


def test_docstring_example():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "john", "lives", "in", "new", "york", "##er"]  # fmt: skip
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    windows = make_windows(
        tokenizer,
        tf.ragged.constant([["John", "lives", "in", "New", "Yorker"]]),
        tf.ragged.constant([[1, 0, 0, 3, 4]]),
        sequence_length=8,
    )
    np.testing.assert_array_equal(
        windows["token_ids"], [[2, 5, 6, 7, 8, 9, 10, 3]]
    )
    np.testing.assert_array_equal(
        windows["labels"], [[-100, 1, 0, 0, 3, 4, -100, -100]]
    )
    np.testing.assert_array_equal(
        windows["predict"], [[0, 1, 1, 1, 1, 1, 0, 0]]
    )
    np.testing.assert_array_equal(
        windows["word_index"], [[-1, 0, 1, 2, 3, 4, 4, -1]]
    )
    np.testing.assert_array_equal(windows["example_index"], [0])


def test_empty_sentence_gives_one_window_without_words(tiny_tokenizer):
    features = ner_features(tiny_tokenizer, [[]], [[]], sequence_length=8)
    np.testing.assert_array_equal(
        features["token_ids"], [[2, 3, 0, 0, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        features["padding_mask"], [[1, 1, 0, 0, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(features["predict"], 0)
    np.testing.assert_array_equal(features["labels"], IGNORED_LABEL)
    np.testing.assert_array_equal(features["word_index"], -1)
    np.testing.assert_array_equal(features["example_index"], [0])
    labels, scores = word_predictions(
        features, np.zeros((1, 8, 3)), [0], outside_id=0
    )
    assert [len(labels[0]), len(scores[0])] == [0, 0]


@pytest.mark.parametrize("nothing", ["\u200b", "\x00", "\ufffd", ""])
def test_a_word_without_tokens_is_predicted_outside(tiny_tokenizer, nothing):
    sentences = [["fox", nothing, "dog"], [nothing]]
    features = windows_of(tiny_tokenizer, sentences, [[1, 2, 3], [4]], 8)
    np.testing.assert_array_equal(
        features["token_ids"], [[2, 8, 19, 3, 0, 0, 0, 0], [2, 3] + [0] * 6]
    )
    np.testing.assert_array_equal(
        features["word_index"][0], [-1, 0, 2, -1, -1, -1, -1, -1]
    )
    np.testing.assert_array_equal(
        features["labels"][0], [-100, 1, 3, -100, -100, -100, -100, -100]
    )
    np.testing.assert_array_equal(features["labels"][1], IGNORED_LABEL)
    np.testing.assert_array_equal(
        features["predict"], [[0, 1, 1, 0, 0, 0, 0, 0], [0] * 8]
    )
    logits = np.zeros((2, 8, 5))
    logits[0, 1, 2] = 4.0  # "fox" -> 2
    logits[0, 2, 3] = 4.0  # "dog" -> 3
    logits[:, :, 4] = 9.0  # never read: not predicted positions
    logits[0, 1, 4] = logits[0, 2, 4] = 0.0
    labels, scores = word_predictions(features, logits, [3, 1], outside_id=0)
    np.testing.assert_array_equal(labels[0], [2, 0, 3])
    np.testing.assert_array_equal(labels[1], [0])
    expected = np.exp(4.0) / (np.exp(4.0) + 4)
    np.testing.assert_allclose(scores[0], [expected, 1.0, expected])
    np.testing.assert_array_equal(scores[1], [1.0])


def test_unknown_label_ids_label_nothing(tiny_tokenizer):
    sentences = [["foxes", "dog", "abbb"]]  # fox ##es, dog, a ##b ##b ##b
    label_ids = [[-1, 2, -1]]
    features = windows_of(tiny_tokenizer, sentences, label_ids, 10)
    np.testing.assert_array_equal(
        features["labels"], [[-100, -100, -100, 2] + [-100] * 6]
    )
    np.testing.assert_array_equal(
        features["predict"], [[0, 1, 0, 1, 1, 0, 0, 0, 0, 0]]
    )
    features = windows_of(
        tiny_tokenizer,
        sentences,
        [[1, -1, 1]],
        10,
        label_all_tokens=True,
        continuation_label_ids=[0, 2, 2],
    )
    np.testing.assert_array_equal(
        features["labels"], [[-100, 1, 2, -100, 1, 2, 2, 2, -100, -100]]
    )


def test_label_all_tokens_without_continuation_labels(tiny_tokenizer):
    features = windows_of(
        tiny_tokenizer,
        [["foxes", "dog", "abbb"]],
        [[1, 2, 3]],
        10,
        label_all_tokens=True,
    )
    np.testing.assert_array_equal(
        features["labels"], [[-100, 1, 1, 2, 3, 3, 3, 3, -100, -100]]
    )


@pytest.mark.parametrize(
    "sequence_length, stride, bad",
    [
        (2, 1, "sequence_length=2"),
        (1.5, 1, "sequence_length=1.5"),
        (8, 0, "stride=0"),
        (8, -1, "stride=-1"),
        (8, 7, "stride=7"),
        (8, 2.0, "stride=2.0"),
        (3, 2, "stride=2"),
    ],
)
def test_bad_window_arguments_name_the_value(
    tiny_tokenizer, sequence_length, stride, bad
):
    with pytest.raises(ValueError, match=bad):
        check_window_arguments(sequence_length, stride)
    with pytest.raises(ValueError, match=bad):
        make_windows(
            tiny_tokenizer,
            tf.ragged.constant([["fox"]]),
            sequence_length=sequence_length,
            stride=stride,
        )
    with pytest.raises(ValueError, match=bad):
        ner_features(
            tiny_tokenizer,
            [["fox"]],
            sequence_length=sequence_length,
            stride=stride,
        )


def test_good_window_arguments_and_default_stride():
    check_window_arguments(3, 1)
    check_window_arguments(8, 6)
    check_window_arguments(8, 1)
    assert default_stride(128) == 63
    assert default_stride(3) == 1
    assert default_stride(4) == 1
    assert default_stride(8) == 3


def test_words_must_be_ragged(tiny_tokenizer):
    with pytest.raises(ValueError, match="tf.RaggedTensor"):
        make_windows(tiny_tokenizer, tf.constant([["fox"]]))
    with pytest.raises(ValueError, match="empty"):
        ner_features(tiny_tokenizer, [])


# --- word_predictions ----------------------------------------------------


def test_word_predictions_of_hand_built_windows():
    # Sentence 0: 3 words, word 1 has no token; sentence 1: 2 words over two
    # windows, word 1 predicted in the second. Width 6, logits cut to 5.
    predict = np.array(
        [
            [0, 1, 0, 1, 0, 0],  # [CLS] w0 w0' w2 [SEP]
            [0, 1, 0, 0, 0, 0],  # [CLS] w0 w1 [SEP]
            [0, 0, 1, 0, 0, 0],  # [CLS] w0 w1 [SEP]
        ],
        np.int32,
    )
    word_index = np.array(
        [
            [-1, 0, 0, 2, -1, -1],
            [-1, 0, 1, -1, -1, -1],
            [-1, 0, 1, -1, -1, -1],
        ],
        np.int32,
    )
    features = {
        "predict": predict,
        "word_index": word_index,
        "example_index": np.array([0, 1, 1], np.int32),
    }
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(3, 5, 4)).astype(np.float32) * 3
    labels, scores = word_predictions(features, logits, [3, 2], outside_id=7)

    def expected(row, position):
        values = logits[row, position].astype(np.float64)
        probabilities = np.exp(values) / np.exp(values).sum()
        return probabilities.argmax(), probabilities.max()

    want = [
        [expected(0, 1), (7, 1.0), expected(0, 3)],
        [expected(1, 1), expected(2, 2)],
    ]
    for sentence in range(2):
        assert labels[sentence].dtype == np.int64
        np.testing.assert_array_equal(
            labels[sentence], [label for label, _ in want[sentence]]
        )
        np.testing.assert_allclose(
            scores[sentence], [score for _, score in want[sentence]], rtol=1e-12
        )
    # A word predicted in two windows is an error, not a silent overwrite.
    twice = dict(features, predict=predict.copy())
    twice["predict"][1, 2] = 1
    with pytest.raises(AssertionError, match="two windows"):
        word_predictions(twice, logits, [3, 2], outside_id=7)


def test_word_predictions_scores_do_not_overflow():
    features = {
        "predict": np.array([[0, 1, 1]], np.int32),
        "word_index": np.array([[-1, 0, 1]], np.int32),
        "example_index": np.array([0], np.int32),
    }
    logits = np.array([[[0, 0], [1000.0, -1000.0], [5.0, 5.0]]], np.float32)
    labels, scores = word_predictions(features, logits, [2], outside_id=0)
    np.testing.assert_array_equal(labels[0], [0, 0])
    np.testing.assert_allclose(scores[0], [1.0, 0.5])
