"""Words → WordPiece windows with labels on each word's first sub-token.

Token classification labels words, BERT sees sub-tokens. As Hugging Face's
`run_ner.py` does (`word_ids()`), each word is tokenized on its own, its
label goes on its first sub-token and every other position (`[CLS]`,
`[SEP]`, padding, the word's other sub-tokens) gets `-100`, which the loss
and metrics leave out; with `label_all_tokens` the other sub-tokens get the
word's label too (a `B-` label as its `I-`).

Unlike `run_ner.py`, nothing is truncated: a sentence longer than the
sequence length is cut into overlapping windows starting every `stride`
tokens, and each word is predicted once, from the window where its first
sub-token has the most context (`keras_bert.text.token_windows`, which the
SavedModel that serves raw text cuts its windows with too). A word that
tokenizes to nothing (only characters BERT's text cleaning drops) has no
position; it is predicted as the outside label `O`.

`make_windows` is TensorFlow ops on batches (eager and in `tf.data`); the
numpy helpers at the end gather a corpus' features and read predictions
back per word (`word_predictions`, whose graph twin is
`keras_bert.decoding.entities.entities_from_windows`).
"""

import numpy as np
import tensorflow as tf

from keras_bert.data.length_grouped_epochs import length_grouped_epochs
from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.data.trim_batch import trim_batch
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.text.token_windows import check_window_arguments
from keras_bert.text.token_windows import default_stride
from keras_bert.text.token_windows import window_tokens
from keras_bert.text.windows import gather_or_zero
from keras_bert.training.losses import IGNORED_LABEL

# The model's inputs among the feature fields.
INPUT_NAMES = BACKBONE_INPUTS
# Windows of one prediction call share a length rounded up to this.
_LENGTH_BUCKET = 16


@tf.autograph.experimental.do_not_convert
def make_windows(
    tokenizer,
    words,
    label_ids=None,
    sequence_length=128,
    stride=None,
    label_all_tokens=False,
    continuation_label_ids=None,
):
    """Tokenizes a batch of pre-split sentences into labelled windows.

    Each word is tokenized on its own, as Hugging Face's fast tokenizer with
    `is_split_into_words=True` does; see `window_tokens` for the windows.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        words: string `tf.RaggedTensor` `(batch_size, (num_words))`.
        label_ids: optional int `tf.RaggedTensor` of the same shape: each
            word's label id; a negative id labels nothing (e.g. a tag the
            model does not know).
        sequence_length: int. Positions per window. Defaults to `128`.
        stride: int. Tokens between window starts. Defaults to half a
            window (`default_stride`).
        label_all_tokens: bool. Label every sub-token of a word, not only
            the first (the others with `continuation_label_ids`).
        continuation_label_ids: int list, with `label_all_tokens`: the
            label of a word's later sub-tokens for each label id (e.g. the
            id of `I-PER` for `B-PER`). Defaults to the same label.

    Returns:
        `window_tokens`' dict, plus with `label_ids` a `labels` int32
        `(num_windows, sequence_length)`, `-100` where nothing is labelled.

    Example:
    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "john", "lives", "in", "new", "york", "##er"]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    windows = make_windows(
        tokenizer,
        tf.ragged.constant([["John", "lives", "in", "New", "Yorker"]]),
        tf.ragged.constant([[1, 0, 0, 3, 4]]),
        sequence_length=8,
    )
    windows["token_ids"]  # [[2, 5, 6, 7, 8, 9, 10, 3]]
    windows["labels"]     # [[-100, 1, 0, 0, 3, 4, -100, -100]]
    ```
    """
    stride = default_stride(sequence_length) if stride is None else stride
    check_window_arguments(sequence_length, stride)
    if not isinstance(words, tf.RaggedTensor):
        raise ValueError(
            "`words` must be a string tf.RaggedTensor (batch_size, "
            f"(num_words)); received {type(words).__name__}. Build it with "
            "tf.ragged.constant(list_of_word_lists)."
        )
    pieces = tokenizer(words.flat_values)  # (num_words, (num_pieces))
    # Each piece's word, counted from 0 in its sentence.
    word_of_piece = pieces.value_rowids()
    sentence_of_word = words.value_rowids()
    word_start = tf.gather(words.row_starts(), sentence_of_word)
    local_word = word_of_piece - tf.gather(word_start, word_of_piece)
    pieces_per_sentence = tf.math.unsorted_segment_sum(
        pieces.row_lengths(),
        sentence_of_word,
        num_segments=words.nrows(),
    )
    token_ids = tf.RaggedTensor.from_row_lengths(
        pieces.values, pieces_per_sentence
    )
    word_index = tf.RaggedTensor.from_row_lengths(
        local_word, pieces_per_sentence
    )
    features = window_tokens(
        tokenizer, token_ids, word_index, sequence_length, stride
    )
    if label_ids is None:
        return features

    label_ids = tf.cast(label_ids, tf.int64)
    ignored = tf.constant(IGNORED_LABEL, tf.int64)
    # Each position's word, as an index into the batch's flat words.
    word_row = tf.gather(words.row_starts(), features["example_index"])
    flat_word = tf.where(
        features["word_index"] >= 0,
        word_row[:, None] + tf.cast(features["word_index"], tf.int64),
        0,
    )
    word_label = gather_or_zero(label_ids.flat_values, flat_word)
    word_label = tf.where(word_label < 0, ignored, word_label)
    labels = tf.where(features["first_token"] > 0, word_label, ignored)
    if label_all_tokens:
        later = (features["word_index"] >= 0) & (features["first_token"] == 0)
        later_label = word_label
        if continuation_label_ids is not None:
            table = tf.constant(continuation_label_ids, tf.int64)
            later_label = tf.where(
                word_label >= 0,
                tf.gather(table, tf.maximum(word_label, 0)),
                ignored,
            )
        labels = tf.where(later, later_label, labels)
    features["labels"] = tf.cast(labels, tf.int32)
    return features


def ner_features(
    tokenizer,
    sentences,
    label_ids=None,
    sequence_length=128,
    stride=None,
    label_all_tokens=False,
    continuation_label_ids=None,
    batch_size=512,
):
    """`make_windows` over a whole corpus, as numpy arrays.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sentences: list of lists of str: each sentence's words.
        label_ids: optional list of lists of int, one per word.
        sequence_length, stride, label_all_tokens, continuation_label_ids:
            see `make_windows`.
        batch_size: int. Sentences tokenized per TensorFlow call.

    Returns:
        `make_windows`' dict as numpy int32 arrays, windows of all
        sentences in order; `example_index` is the sentence's index in
        `sentences`.
    """
    stride = default_stride(sequence_length) if stride is None else stride
    check_window_arguments(sequence_length, stride)
    with_labels = label_ids is not None

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string),
            tf.TensorSpec([None], tf.int64),
            tf.TensorSpec([None], tf.int64),
        ]
    )
    def windows(flat_words, row_lengths, flat_labels):
        words = tf.RaggedTensor.from_row_lengths(flat_words, row_lengths)
        labels = None
        if with_labels:
            labels = tf.RaggedTensor.from_row_lengths(flat_labels, row_lengths)
        return make_windows(
            tokenizer,
            words,
            labels,
            sequence_length=sequence_length,
            stride=stride,
            label_all_tokens=label_all_tokens,
            continuation_label_ids=continuation_label_ids,
        )

    parts = []
    for first in range(0, len(sentences), batch_size):
        chunk = sentences[first : first + batch_size]
        flat_words = [word for sentence in chunk for word in sentence]
        flat_labels = [0] * len(flat_words)
        if with_labels:
            flat_labels = [
                label
                for labels in label_ids[first : first + batch_size]
                for label in labels
            ]
        result = windows(
            tf.constant(flat_words, tf.string, shape=[len(flat_words)]),
            tf.constant([len(s) for s in chunk], tf.int64),
            tf.constant(flat_labels, tf.int64, shape=[len(flat_labels)]),
        )
        result = {name: value.numpy() for name, value in result.items()}
        result["example_index"] += first
        parts.append(result)
    if not parts:
        raise ValueError("`sentences` is empty: there is nothing to window.")
    return {
        name: np.concatenate([part[name] for part in parts])
        for name in parts[0]
    }


def word_predictions(features, logits, sentence_lengths, outside_id):
    """Each word's predicted label id and probability, per sentence.

    In numpy; the graph twin is the first half of
    `keras_bert.decoding.entities.entities_from_windows`.

    Args:
        features: `ner_features`' dict (numpy).
        logits: float array `(num_windows, sequence_length, num_classes)`
            (columns beyond a row's last token may be missing).
        sentence_lengths: list of int: words per sentence.
        outside_id: int. The label of a word that has no position (it
            tokenizes to nothing).

    Returns:
        `(labels, scores)`: lists (one per sentence) of int arrays and of
        float arrays (the softmax probability of the predicted label).
    """
    predict = features["predict"][:, : logits.shape[1]] > 0
    rows, columns = np.nonzero(predict)
    chosen = logits[rows, columns].astype(np.float64)
    chosen -= chosen.max(axis=-1, keepdims=True)
    probabilities = np.exp(chosen)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    label = probabilities.argmax(axis=-1)
    score = probabilities.max(axis=-1)
    sentence = features["example_index"][rows]
    word = features["word_index"][rows, columns]
    offsets = np.concatenate([[0], np.cumsum(sentence_lengths)])
    flat_labels = np.full(offsets[-1], outside_id, np.int64)
    flat_scores = np.ones(offsets[-1], np.float64)
    flat = offsets[sentence] + word
    if len(np.unique(flat)) != len(flat):
        raise AssertionError("a word was predicted in two windows")
    flat_labels[flat] = label
    flat_scores[flat] = score
    return (
        [flat_labels[a:b] for a, b in zip(offsets[:-1], offsets[1:])],
        [flat_scores[a:b] for a, b in zip(offsets[:-1], offsets[1:])],
    )


def training_batches(
    features, batch_size, seed, first_epoch, num_epochs, group_by_length=True
):
    """The training batches of labelled windows, as `recipes/ner.py` trains.

    Each epoch's order depends on `(seed, epoch)` alone: windows of like
    length batched together (`keras_bert.data.length_grouped_epochs`), or
    plainly shuffled; each batch is cut to its longest window rounded up
    to 8 (`keras_bert.data.trim_batch`).

    Args:
        features: `ner_features`' dict (numpy), with `labels`.
        batch_size: int. Windows per batch.
        seed: int. Seed of the order.
        first_epoch, num_epochs: int. Batches of epochs `first_epoch`, ...,
            `num_epochs - 1`, one after the other.
        group_by_length: bool. Like-length batches, or plain shuffling.

    Returns:
        A `tf.data.Dataset` of `(inputs, labels)` batches.
    """
    rows = ({name: features[name] for name in INPUT_NAMES}, features["labels"])
    if group_by_length:
        lengths = features["padding_mask"].sum(axis=1)
        batches = length_grouped_epochs(
            rows, lengths, batch_size, seed, first_epoch, num_epochs
        )
    else:
        batches = shuffled_epochs(
            tf.data.Dataset.from_tensor_slices(rows),
            batch_size,
            seed,
            first_epoch,
            num_epochs,
        )
    return batches.map(trim_labelled).prefetch(tf.data.AUTOTUNE)


def trim_labelled(inputs, labels):
    """An `(inputs, labels)` batch cut to its longest row (rounded up to
    8; `keras_bert.data.trim_batch`)."""
    trimmed = trim_batch({**inputs, "labels": labels}, multiple=8)
    labels = trimmed.pop("labels")
    return trimmed, labels


def window_logits(model, features, batch_size):
    """Logits of every window; windows of like length predicted together.

    Args:
        model: the tagger (`model.predict` on the ids dict gives logits).
        features: `ner_features`' dict (numpy).
        batch_size: int. Windows per prediction batch.

    Returns:
        float32 `(num_windows, sequence_length, num_classes)` (zeros
        beyond each bucket's length).
    """
    lengths = features["padding_mask"].sum(axis=1)
    buckets = -(-lengths // _LENGTH_BUCKET) * _LENGTH_BUCKET
    sequence_length = features["token_ids"].shape[1]
    buckets = np.minimum(buckets, sequence_length)
    logits = None
    for length in np.unique(buckets):
        rows = np.nonzero(buckets == length)[0]
        inputs = {name: features[name][rows, :length] for name in INPUT_NAMES}
        part = model.predict(inputs, batch_size=batch_size, verbose=0)
        if logits is None:
            logits = np.zeros(
                (len(lengths), sequence_length, part.shape[-1]), np.float32
            )
        logits[rows, :length] = part
    return logits
