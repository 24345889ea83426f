"""SQuAD windows and labels.

The reference for parity is Hugging Face's fast tokenizer, called per
example the way `run_qa.py` does (`truncation="only_second"`,
`return_overflowing_tokens`, `return_offsets_mapping`, padding to
`max_seq_length`), with the question first cut to `max_query_length`
tokens and `stride` set to the window's context length minus `doc_stride`
(Hugging Face's stride is the overlap between windows, `run_squad.py`'s the
distance between their starts). Labels follow `run_qa.py`'s
`prepare_train_features`, windows and max-context `run_squad.py`'s
`_DocSpan` loop and `_check_is_max_context`, each ported below. Everything
is compared exactly (integers).
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.fine_tuning.squad.examples import read_squad_examples
from keras_bert.fine_tuning.squad.features import make_windows
from keras_bert.fine_tuning.squad.features import squad_dataset
from keras_bert.fine_tuning.squad.features import squad_features
from tests.fine_tuning.squad.data import squad_path
from tests.text import references

# (max_seq_length, doc_stride, max_query_length): the defaults, then
# windows small enough that most contexts need several.
WINDOW_SIZES = [(384, 128, 64), (128, 32, 64), (64, 16, 32)]
SAMPLE_STEP = 17  # every 17th dev question: 101 of 1,702, every article


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
def dev_examples():
    return read_squad_examples(squad_path("dev.json"))


@pytest.fixture(scope="module")
def tiny_tokenizer():
    return keras_bert.BertTokenizer(references.TINY_VOCABULARY)


# --- The references -------------------------------------------------------


def run_squad_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """`run_squad.py`'s windows: `(start, length)` in context tokens."""
    spans, start = [], 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def check_is_max_context(doc_spans, cur_span_index, position):
    """`run_squad.py`'s `_check_is_max_context`, line for line."""
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
    return cur_span_index == best_span_index


def run_qa_labels(offsets, sequence_ids, start_char, end_char):
    """`run_qa.py`'s `prepare_train_features` labels for one window.

    Returns `(start, end)`; `None` for an example without an answer, which
    `run_qa.py` reads as `[CLS]` (0).
    """
    if start_char < 0:
        return 0, 0
    token_start_index = 0
    while sequence_ids[token_start_index] != 1:
        token_start_index += 1
    token_end_index = len(offsets) - 1
    while sequence_ids[token_end_index] != 1:
        token_end_index -= 1
    if not (
        offsets[token_start_index][0] <= start_char
        and offsets[token_end_index][1] >= end_char
    ):
        return 0, 0
    while (
        token_start_index < len(offsets)
        and offsets[token_start_index][0] <= start_char
    ):
        token_start_index += 1
    while offsets[token_end_index][1] >= end_char:
        token_end_index -= 1
    return token_start_index - 1, token_end_index + 1


def hugging_face_windows(hugging_face, example, sizes):
    """The windows Hugging Face's fast tokenizer builds for `example`."""
    max_seq_length, doc_stride, max_query_length = sizes
    question = example["question"]
    question_tokens = hugging_face(
        question, add_special_tokens=False, return_offsets_mapping=True
    )
    if len(question_tokens["input_ids"]) > max_query_length:
        cut = question_tokens["offset_mapping"][max_query_length - 1][1]
        question = question[:cut]
    num_question = len(
        hugging_face(question, add_special_tokens=False)["input_ids"]
    )
    assert num_question == min(
        len(question_tokens["input_ids"]), max_query_length
    )
    window_length = max_seq_length - num_question - 3
    # transformers encodes `question` alone when the pair's second text is
    # "" (falsy); the Rust pair encoding of an empty context, which a
    # context of spaces gets, is `[CLS] question [SEP] [SEP]`, as ours.
    encoding = hugging_face(
        question,
        example["context"] or " ",
        truncation="only_second",
        max_length=max_seq_length,
        stride=window_length - doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    start_char = example["answer_start"]
    end_char = start_char + len(example["answer_text"])
    windows = []
    for index, offsets in enumerate(encoding["offset_mapping"]):
        sequence_ids = encoding.sequence_ids(index)
        context = [i for i, s in enumerate(sequence_ids) if s == 1]
        offsets = np.array(offsets)
        context_offsets = np.full_like(offsets, -1)
        context_offsets[context] = offsets[context]
        start, end = 0, 0
        if context:  # run_qa.py fails on a window without context
            start, end = run_qa_labels(
                offsets, sequence_ids, start_char, end_char
            )
        windows.append(
            {
                "token_ids": encoding["input_ids"][index],
                "segment_ids": encoding["token_type_ids"][index],
                "padding_mask": encoding["attention_mask"][index],
                "offset_start": context_offsets[:, 0],
                "offset_end": context_offsets[:, 1],
                "start_positions": start,
                "end_positions": end,
                "context_positions": context,
            }
        )
    return windows, window_length


def run_squad_max_context(hugging_face, example, windows, window_length, sizes):
    """`_check_is_max_context` on `run_squad.py`'s own windows.

    Also checks that Hugging Face's windows (with the converted stride)
    are `run_squad.py`'s: same count, same first token, same length.
    """
    max_seq_length, doc_stride, _ = sizes
    context_offsets = [
        tuple(o)
        for o in hugging_face(
            example["context"],
            add_special_tokens=False,
            return_offsets_mapping=True,
        )["offset_mapping"]
    ]
    spans = run_squad_doc_spans(
        len(context_offsets), window_length, doc_stride
    ) or [(0, 0)]  # run_squad.py has no window for an empty context
    assert len(spans) == len(windows)
    max_context = np.zeros((len(windows), max_seq_length), np.int32)
    for index, ((start, length), window) in enumerate(zip(spans, windows)):
        positions = window["context_positions"]
        assert len(positions) == length
        if length:
            first = positions[0]
            assert (
                window["offset_start"][first],
                window["offset_end"][first],
            ) == context_offsets[start]
        for i, position in enumerate(positions):
            max_context[index, position] = check_is_max_context(
                spans, index, start + i
            )
    return max_context


def assert_matches_hugging_face(features, examples, hugging_face, sizes):
    """Compares every window; returns how many hit `run_qa.py`'s overrun.

    `run_qa.py` moves the start label forward while a token starts at or
    before the answer; when the answer starts in the window's last context
    token it runs on through `[SEP]` and padding (offsets `(0, 0)`) and
    labels the window's last position. Ours labels that context token.
    """
    row, overruns = 0, 0
    for index in range(len(examples["question"])):
        example = {name: values[index] for name, values in examples.items()}
        windows, window_length = hugging_face_windows(
            hugging_face, example, sizes
        )
        rows = slice(row, row + len(windows))
        context = f"example {index} ({example['id']}), windows {rows}"
        np.testing.assert_array_equal(
            features["example_index"][rows], index, err_msg=context
        )
        for name in (
            "token_ids", "segment_ids", "padding_mask", "offset_start",
            "offset_end", "start_positions", "end_positions",
        ):  # fmt: skip
            expected = np.array([w[name] for w in windows])
            if name == "start_positions":
                for i, window in enumerate(windows):
                    positions = window["context_positions"]
                    if positions and expected[i] > positions[-1]:
                        expected[i] = positions[-1]
                        overruns += 1
            np.testing.assert_array_equal(
                features[name][rows], expected, err_msg=f"{name}, {context}"
            )
        np.testing.assert_array_equal(
            features["max_context"][rows],
            run_squad_max_context(
                hugging_face, example, windows, window_length, sizes
            ),
            err_msg=f"max_context, {context}",
        )
        row += len(windows)
    assert row == len(features["example_index"])
    return overruns


def sample(examples, step):
    return {name: values[::step] for name, values in examples.items()}


# --- Parity with Hugging Face on real SQuAD --------------------------------


@pytest.mark.parametrize("sizes", WINDOW_SIZES, ids=str)
def test_sample_of_dev_matches_hugging_face(
    tokenizer, hugging_face, dev_examples, sizes
):
    examples = sample(dev_examples, SAMPLE_STEP)
    max_seq_length, doc_stride, max_query_length = sizes
    features = squad_features(
        examples,
        tokenizer,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
    )
    assert_matches_hugging_face(features, examples, hugging_face, sizes)
    if max_seq_length < 384:  # the sample does cover long contexts
        windows = np.bincount(features["example_index"])
        assert windows.max() >= 4 and (windows > 1).mean() > 0.5


@pytest.mark.slow
@pytest.mark.parametrize("sizes", WINDOW_SIZES, ids=str)
def test_every_dev_question_matches_hugging_face(
    tokenizer, hugging_face, dev_examples, sizes
):
    max_seq_length, doc_stride, max_query_length = sizes
    features = squad_features(
        dev_examples,
        tokenizer,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
    )
    overruns = assert_matches_hugging_face(
        features, dev_examples, hugging_face, sizes
    )
    # Counted on this dev set: identical labels at the default sizes.
    assert overruns == {384: 0, 128: 2, 64: 9}[max_seq_length]


def test_edge_cases_match_hugging_face(tokenizer, hugging_face):
    context = "Zürich, 日本 and the café — 1,000.5 km² (approx.)"
    cases = [
        ("", context, "Zürich"),
        ("   ", context, "café"),
        ("Where?", "", ""),
        ("", "", ""),
        ("How far is it? " * 30, context, "1,000.5 km²"),
        ("What is it?", "!!!", "!!!"),
        ("Which one?", context, "(approx.)"),
        ("Which one?", context, "approx"),
        ("unaffable " * 10, "unaffable " * 20 + "end", "end"),
    ]
    examples = {
        "id": [str(i) for i in range(len(cases))],
        "question": [q for q, _, _ in cases],
        "context": [c for _, c, _ in cases],
        "answer_text": [a for _, _, a in cases],
        "answer_start": [c.find(a) if a else -1 for _, c, a in cases],
    }
    for sizes in [(384, 128, 64), (16, 4, 8)]:
        max_seq_length, doc_stride, max_query_length = sizes
        features = squad_features(
            examples,
            tokenizer,
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
        )
        assert_matches_hugging_face(features, examples, hugging_face, sizes)


# --- Windows and max-context against run_squad.py ---------------------------


@pytest.mark.parametrize(
    "sizes", [(12, 1, 3), (12, 2, 3), (16, 3, 4), (16, 9, 4), (20, 5, 8)]
)
def test_windows_and_max_context_match_run_squad(tiny_tokenizer, sizes):
    # Every context length from 0 to 40 tokens, questions of 0 to 9 tokens
    # (longer than max_query_length too): one token per word.
    max_seq_length, doc_stride, max_query_length = sizes
    cases = [(q, c) for q in (0, 1, 2, 5, 9) for c in range(41)]
    features = make_windows(
        tiny_tokenizer,
        [" ".join(["fox"] * q) for q, _ in cases],
        [" ".join(["dog"] * c) for _, c in cases],
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
    )
    features = {name: value.numpy() for name, value in features.items()}
    row = 0
    for index, (num_question, num_context) in enumerate(cases):
        num_question = min(num_question, max_query_length)
        window_length = max_seq_length - num_question - 3
        spans = run_squad_doc_spans(num_context, window_length, doc_stride)
        spans = spans or [(0, 0)]
        rows = slice(row, row + len(spans))
        np.testing.assert_array_equal(features["example_index"][rows], index)
        for window, (start, length) in enumerate(spans):
            context_begin = num_question + 2
            expected = np.zeros(max_seq_length, np.int32)
            for i in range(length):
                expected[context_begin + i] = check_is_max_context(
                    spans, window, start + i
                )
            np.testing.assert_array_equal(
                features["max_context"][row + window],
                expected,
                err_msg=f"case {cases[index]}, window {window} of {spans}",
            )
            segments = np.zeros(max_seq_length, np.int32)
            segments[context_begin : context_begin + length + 1] = 1
            np.testing.assert_array_equal(
                features["segment_ids"][row + window], segments
            )
        row += len(spans)
    assert row == len(features["example_index"])


# --- Edge cases -------------------------------------------------------------

CLS, SEP, THE, QUICK, BROWN, FOX, DOG = 2, 3, 5, 6, 7, 8, 19


def windows(tokenizer, questions, contexts, starts=None, texts=None):
    """`make_windows` with 12 tokens a window, stride 2, questions <= 3."""
    features = make_windows(
        tokenizer,
        questions,
        contexts,
        answer_starts=starts,
        answer_texts=texts,
        max_seq_length=12,
        doc_stride=2,
        max_query_length=3,
    )
    return {name: value.numpy() for name, value in features.items()}


def test_layout_of_one_window(tiny_tokenizer):
    features = windows(
        tiny_tokenizer, ["The fox?"], ["Quick  brown dog."], [7], ["brown"]
    )
    np.testing.assert_array_equal(
        features["token_ids"],
        [[CLS, THE, FOX, 1, SEP, QUICK, BROWN, DOG, 10, SEP, 0, 0]],
    )
    np.testing.assert_array_equal(
        features["segment_ids"], [[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0]]
    )
    np.testing.assert_array_equal(features["padding_mask"], [[1] * 10 + [0, 0]])
    np.testing.assert_array_equal(
        features["offset_start"], [[-1] * 5 + [0, 7, 13, 16] + [-1] * 3]
    )
    np.testing.assert_array_equal(
        features["offset_end"], [[-1] * 5 + [5, 12, 16, 17] + [-1] * 3]
    )
    np.testing.assert_array_equal(
        features["max_context"], [[0] * 5 + [1] * 4 + [0] * 3]
    )
    assert features["start_positions"].tolist() == [6]
    assert features["end_positions"].tolist() == [6]
    assert features["example_index"].tolist() == [0]


def test_docstring_example():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "the", "quick", "brown", "fox", "##es", "."]  # fmt: skip
    features = make_windows(
        keras_bert.BertTokenizer(vocabulary),
        ["The fox?"],
        ["The quick brown foxes."],
        answer_starts=[10],
        answer_texts=["brown"],
        max_seq_length=8,
        doc_stride=2,
        max_query_length=2,
    )
    np.testing.assert_array_equal(
        features["token_ids"],
        [
            [2, 5, 8, 3, 5, 6, 7, 3],
            [2, 5, 8, 3, 7, 8, 9, 3],
            [2, 5, 8, 3, 9, 10, 3, 0],
        ],
    )
    np.testing.assert_array_equal(
        features["offset_start"][1], [-1, -1, -1, -1, 10, 16, 19, -1]
    )
    # "brown" (token 2) ties between windows 0 and 1: the first wins.
    np.testing.assert_array_equal(
        features["max_context"],
        [
            [0, 0, 0, 0, 1, 1, 1, 0],
            [0, 0, 0, 0, 0, 1, 1, 0],
            [0, 0, 0, 0, 0, 1, 0, 0],
        ],
    )
    assert features["start_positions"].numpy().tolist() == [6, 4, 0]


def test_empty_context_gives_one_window_without_context(tiny_tokenizer):
    features = windows(tiny_tokenizer, ["The fox"], [""], [0], ["fox"])
    np.testing.assert_array_equal(
        features["token_ids"], [[CLS, THE, FOX, SEP, SEP] + [0] * 7]
    )
    np.testing.assert_array_equal(
        features["segment_ids"], [[0] * 4 + [1] + [0] * 7]
    )
    np.testing.assert_array_equal(features["offset_start"], [[-1] * 12])
    np.testing.assert_array_equal(features["max_context"], [[0] * 12])
    assert features["start_positions"].tolist() == [0]
    assert features["end_positions"].tolist() == [0]


def test_empty_question_and_context(tiny_tokenizer):
    features = windows(tiny_tokenizer, ["", "   "], ["The dog", ""])
    np.testing.assert_array_equal(
        features["token_ids"],
        [[CLS, SEP, THE, DOG, SEP] + [0] * 7, [CLS, SEP, SEP] + [0] * 9],
    )
    assert features["example_index"].tolist() == [0, 1]


def test_long_question_keeps_max_query_length_tokens(tiny_tokenizer):
    features = windows(tiny_tokenizer, ["the quick brown fox dog"], ["dog"])
    np.testing.assert_array_equal(
        features["token_ids"],
        [[CLS, THE, QUICK, BROWN, SEP, DOG, SEP] + [0] * 5],
    )


def test_windows_of_a_long_context_and_their_labels(tiny_tokenizer):
    # Question "fox": 12 - 1 - 3 = 8 context tokens a window, starts every
    # 2 tokens: windows [0, 8), [2, 10), [4, 12) for 12 tokens.
    context = "the quick brown fox dog the quick brown fox dog the quick"
    start = context.index("dog the")  # tokens 4 and 5
    features = windows(tiny_tokenizer, ["fox"], [context], [start], ["dog the"])
    assert features["example_index"].tolist() == [0, 0, 0]
    np.testing.assert_array_equal(
        features["offset_start"][:, 3], [0, 10, 20]
    )  # first context token of each window: tokens 0, 2, 4
    # Position of a context token = its index - window start + 3.
    assert features["start_positions"].tolist() == [7, 5, 3]
    assert features["end_positions"].tolist() == [8, 6, 4]
    # An answer starting before the window (token 1 "quick", "brown") is
    # only labelled in the first window.
    features = windows(tiny_tokenizer, ["fox"], [context], [4], ["quick brown"])
    assert features["start_positions"].tolist() == [4, 0, 0]
    assert features["end_positions"].tolist() == [5, 0, 0]


def test_answer_in_the_last_context_token_of_a_window(tiny_tokenizer):
    # Token 7 ("brown", second one) is the last context token of window 0
    # (tokens 0-7, positions 3-10); run_qa.py would label position 11.
    context = "the quick brown fox dog the quick brown fox dog the quick"
    start = context.index("brown", 11)
    features = windows(tiny_tokenizer, ["fox"], [context], [start], ["brown"])
    assert features["start_positions"].tolist() == [10, 8, 6]
    assert features["end_positions"].tolist() == [10, 8, 6]


def test_answer_inside_a_token_labels_the_token_holding_it(tiny_tokenizer):
    # "foxes" is "fox ##es"; "oxe" starts in "fox" and ends in "##es".
    features = windows(tiny_tokenizer, ["dog"], ["The foxes."], [5], ["oxe"])
    assert features["start_positions"].tolist() == [4]
    assert features["end_positions"].tolist() == [5]


@pytest.mark.parametrize(
    "start, text", [(-1, ""), (-1, "fox"), (4, ""), (0, "the fox.!")]
)
def test_no_answer_labels_cls(tiny_tokenizer, start, text):
    # Impossible, untrainable, empty, or ending past the context.
    features = windows(tiny_tokenizer, ["dog"], ["The fox."], [start], [text])
    assert features["start_positions"].tolist() == [0]
    assert features["end_positions"].tolist() == [0]


def test_offsets_are_code_points_of_the_original_text(tiny_tokenizer):
    context = "日本 the FOXES"
    features = windows(tiny_tokenizer, ["fox"], [context], [3], ["the"])
    starts = features["offset_start"][0]
    ends = features["offset_end"][0]
    pieces = [context[s:e] for s, e in zip(starts, ends) if s >= 0]
    assert pieces == ["日", "本", "the", "FOX", "ES"]
    assert features["start_positions"].tolist() == [5]


def test_empty_batch(tiny_tokenizer):
    features = make_windows(
        tiny_tokenizer,
        tf.constant([], tf.string),
        tf.constant([], tf.string),
        max_seq_length=12,
        doc_stride=2,
        max_query_length=3,
    )
    assert features["token_ids"].shape == (0, 12)
    assert features["example_index"].shape == (0,)


@pytest.mark.parametrize(
    "sizes, message",
    [
        ((384, 0, 64), "`doc_stride`, expected a positive integer"),
        ((384, 2.5, 64), "Received: doc_stride=2.5"),
        ((0, 128, 64), "`max_seq_length`, expected a positive integer"),
        ((384, 128, -1), "Received: max_query_length=-1"),
        ((67, 1, 64), "at least max_query_length \\+ 4 = 68"),
        ((128, 62, 64), "at most .* = 61. Received: doc_stride=62"),
    ],
)
def test_bad_window_sizes_are_refused(tiny_tokenizer, sizes, message):
    max_seq_length, doc_stride, max_query_length = sizes
    with pytest.raises(ValueError, match=message):
        make_windows(
            tiny_tokenizer,
            ["fox"],
            ["dog"],
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
        )


def test_answer_arguments_come_together(tiny_tokenizer):
    with pytest.raises(ValueError, match="`answer_starts` and `answer_texts`"):
        make_windows(tiny_tokenizer, ["fox"], ["dog"], answer_starts=[0])


def test_graph_has_no_python_ops(tiny_tokenizer):
    # Pure TensorFlow: the function can go into a SavedModel.
    function = tf.function(
        lambda q, c, s, t: make_windows(tiny_tokenizer, q, c, s, t, 12, 2, 3),
        input_signature=[tf.TensorSpec([None], tf.string)] * 2
        + [tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.string)],
    )
    graph = function.get_concrete_function().graph
    op_types = {op.type for op in graph.get_operations()}
    for function_def in graph.as_graph_def().library.function:
        op_types |= {node.op for node in function_def.node_def}
    assert not op_types & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    features = function(["fox"], ["the dog"], [4], ["dog"])
    assert features["start_positions"].numpy().tolist() == [4]


# --- Datasets ---------------------------------------------------------------


def tiny_examples():
    contexts = [
        "the quick brown fox dog the quick brown fox dog the quick",
        "the dog",
        "the fox",
        "",
    ]
    return {
        "id": ["a", "b", "c", "d"],
        "question": ["fox", "the fox", "", "dog"],
        "context": contexts,
        "answer_text": ["dog", "dog", "fox", "dog"],
        "answer_start": [20, 4, 4, -1],
        "trainable": [True, True, False, False],
    }


def test_evaluation_windows_come_in_order(tiny_tokenizer):
    examples = tiny_examples()
    dataset = squad_dataset(
        examples,
        tiny_tokenizer,
        batch_size=3,
        max_seq_length=12,
        doc_stride=2,
        max_query_length=3,
        examples_per_call=3,  # windows cross the call boundary
    )
    batches = list(dataset.as_numpy_iterator())
    assert [len(b["example_index"]) for b in batches] == [3, 3]
    indices = np.concatenate([b["example_index"] for b in batches])
    assert indices.tolist() == [0, 0, 0, 1, 2, 3]
    features = squad_features(
        examples,
        tiny_tokenizer,
        max_seq_length=12,
        doc_stride=2,
        max_query_length=3,
    )
    direct = windows(
        tiny_tokenizer,
        examples["question"],
        examples["context"],
        examples["answer_start"],
        examples["answer_text"],
    )
    assert sorted(features) == sorted(direct)
    for name in direct:
        np.testing.assert_array_equal(features[name], direct[name])


def test_training_batches_skip_untrainable_examples(tiny_tokenizer):
    dataset = squad_dataset(
        tiny_examples(),
        tiny_tokenizer,
        batch_size=2,
        training=True,
        max_seq_length=12,
        doc_stride=2,
        max_query_length=3,
        seed=1,
    )
    for name, spec in dataset.element_spec.items():
        expected = (2, 12) if spec.shape.rank == 2 else (2,)
        assert spec.shape == expected, name
    assert sorted(dataset.element_spec) == [
        "end_positions", "example_index", "padding_mask", "segment_ids",
        "start_positions", "token_ids",
    ]  # fmt: skip
    # Examples 0 (3 windows) and 1 (1 window): 2 full batches.
    batches = list(dataset.as_numpy_iterator())
    indices = np.concatenate([b["example_index"] for b in batches])
    assert sorted(indices.tolist()) == [0, 0, 0, 1]
    labels = {
        (i, s) for b in batches
        for i, s in zip(b["example_index"], b["start_positions"])
    }  # fmt: skip
    assert labels == {(0, 7), (0, 5), (0, 3), (1, 5)}


def test_no_examples(tiny_tokenizer):
    examples = {name: [] for name in tiny_examples()}
    features = squad_features(
        examples, tiny_tokenizer, max_seq_length=12, doc_stride=2,
        max_query_length=3,
    )  # fmt: skip
    assert features["token_ids"].shape == (0, 12)
    assert features["start_positions"].shape == (0,)


def test_training_needs_answers(tiny_tokenizer):
    examples = {"question": ["fox"], "context": ["dog"]}
    with pytest.raises(ValueError, match="Training needs answers"):
        squad_dataset(examples, tiny_tokenizer, training=True)
