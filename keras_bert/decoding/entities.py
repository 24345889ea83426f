"""Named entities of raw texts, with TensorFlow ops.

`entity_text_function` is what `BertTokenClassifier` runs on raw text, in
its SavedModel's `serving_default` and in its `predict`: the whole
pipeline — tokenizing with offsets, grouping sub-tokens into words,
cutting long texts into windows, the model, one prediction per word and
the entities — as TensorFlow and tensorflow-text ops.

A *word* here is what BERT's basic tokenizer splits (whitespace and
punctuation; each CJK character): a token starts a word unless its
WordPiece starts with `##`. Each word gets the label and probability of its
first sub-token (Hugging Face's `aggregation_strategy="first"`), read from
the window where that sub-token has the most context. Entities are the
chunks `conlleval` finds in the word labels, each spanning its first
word's start to its last word's end, scored by the mean of its words'
probabilities.

The numpy twin, for a Keras model in Python, is
`keras_bert.fine_tuning.ner.entities.find_entities` (each word's prediction by
`keras_bert.training.ner_features.word_predictions`, the chunks by
`keras_bert.training.ner_metrics.get_entities`); both give the same entities.
"""

import numpy as np
import tensorflow as tf

from keras_bert.decoding.text_functions import call_on_windows
from keras_bert.decoding.text_functions import string_signature
from keras_bert.text.token_windows import check_window_arguments
from keras_bert.text.token_windows import default_stride
from keras_bert.text.token_windows import window_tokens

# Tag prefixes, as codes: no entity, begin, inside, end, single.
_O, _B, _I, _E, _S = range(5)
_PREFIXES = {"B": _B, "I": _I, "E": _E, "S": _S}

# What pads the entity outputs past a text's last entity.
ENTITY_PADDING = {
    "entity": "",
    "entity_type": "",
    "start": -1,
    "end": -1,
    "score": 0.0,
}


def label_codes(labels):
    """Each label's prefix code and type, checked.

    Args:
        labels: list of str: `"O"` or `<B|I|E|S>-<type>`.

    Returns:
        `(prefixes, types)`: int list and str list (`""` for `"O"`).
    """
    prefixes, types = [], []
    for label in labels:
        if label == "O":
            prefixes.append(_O)
            types.append("")
            continue
        prefix, _, entity_type = label.partition("-")
        if prefix not in _PREFIXES or not entity_type:
            raise ValueError(
                f"Serving entities needs tags `O` or `B-`, `I-`, `E-`, `S-` "
                f"+ type; received the label {label!r} among {labels}. "
                "Build the model with `labels=[...]` naming its tags, or "
                "pass `labels=` to `export_saved_model`."
            )
        prefixes.append(_PREFIXES[prefix])
        types.append(entity_type)
    return prefixes, types


def tag_labels(model, labels=None):
    """The tag of each of `model`'s classes: `labels`, or the model's.

    Args:
        model: a token classifier with `label_names` and `num_classes`
            (`keras_bert.BertTokenClassifier`).
        labels: list of str or `None` (the model's `label_names`).

    Returns:
        A list of `model.num_classes` str.
    """
    labels = list(model.label_names if labels is None else labels)
    if len(labels) != model.num_classes:
        raise ValueError(
            f"The model has {model.num_classes} classes but {len(labels)} "
            f"labels were given ({labels}). Pass one label per class."
        )
    return labels


def entity_text_function(
    model, preprocessor, labels=None, stride=None, trim=True
):
    """The text function of a token classifier: texts → entities.

    The function takes `text`, string `(batch,)`, and returns the entities
    of each text, padded to the batch's most: `entity` (the text of each),
    `entity_type` string, `start` and `end` int32 (Unicode code points,
    `text[start:end] == entity` in Python), `score` float32, all
    `(batch, max_entities)` (padding: `ENTITY_PADDING`, `""`, `-1`,
    `0.0`), and `num_entities` int32 `(batch,)`.

    Args:
        model: callable from the ids dict to logits `(batch, sequence,
            classes)`, with `label_names` and `num_classes`
            (`keras_bert.BertTokenClassifier`).
        preprocessor: `keras_bert.BertPreprocessor`: its tokenizer and its
            `sequence_length` (the window length).
        labels: list of str or `None`: the tag of each class; defaults to
            the model's `labels`.
        stride: int or `None`. Tokens between window starts; defaults to
            half a window.
        trim: bool. Cut the windows to the request's longest
            (`trim_to_longest_row`) before the model runs: the same
            entities, faster. Defaults to `True`.

    Returns `(function, input_signature)`, a text function
    (`keras_bert.decoding.text_functions`).
    """
    sequence_length = preprocessor.sequence_length
    stride = default_stride(sequence_length) if stride is None else stride
    check_window_arguments(sequence_length, stride)
    prefixes, types = label_codes(tag_labels(model, labels))
    tokenizer = preprocessor.tokenizer
    # Whether each vocabulary id continues a word (a `##` piece).
    continues = tf.constant(
        np.array(
            [token.startswith("##") for token in tokenizer.vocabulary], bool
        )
    )

    def serve_text(text):
        ids, starts, ends = tokenizer.tokenize_with_offsets(text)
        word_index = ids.with_flat_values(
            word_numbers(tf.gather(continues, ids.flat_values), ids)
        )
        windows = window_tokens(
            tokenizer, ids, word_index, sequence_length, stride
        )
        windows, logits = call_on_windows(model, windows, trim)
        return entities_from_windows(
            windows,
            tf.cast(logits, tf.float32),
            text,
            token_starts=starts,
            token_ends=ends,
            word_index=word_index,
            prefixes=prefixes,
            types=types,
        )

    return serve_text, string_signature(("text",))


def word_numbers(continues, tokens):
    """Each token's word, counted from 0 in its row (flat int64).

    Args:
        continues: bool `(num_tokens,)`: whether each token continues the
            word before it (a `##` WordPiece).
        tokens: the ragged `(batch, (tokens))` tensor they belong to.
    """
    starts = tf.cast(tf.logical_not(continues), tf.int64)
    started = tf.cumsum(starts)  # words started up to each token
    before_row = tf.gather(
        tf.concat([[0], started], 0), tokens.row_starts()
    )  # words started before each row
    local = started - 1 - tf.gather(before_row, tokens.value_rowids())
    return tf.maximum(local, 0)


@tf.autograph.experimental.do_not_convert
def entities_from_windows(
    windows, logits, text, token_starts, token_ends, word_index, prefixes, types
):
    """The entities of each text from its windows' logits (graph ops).

    The graph twin of `keras_bert.training.ner_features.word_predictions`
    followed by `keras_bert.training.ner_metrics.get_entities`.

    Args:
        windows: `window_tokens`' dict for the texts' tokens.
        logits: float32 `(num_windows, width, classes)`, `width` that
            of the windows (`sequence_length`, or fewer once trimmed).
        text: string `(batch,)`.
        token_starts, token_ends: int ragged `(batch, (tokens))`: each
            token's code-point span in its text.
        word_index: int ragged `(batch, (tokens))`: each token's word.
        prefixes, types: `label_codes(labels)`.

    Returns:
        `entity_text_function`'s outputs.
    """
    batch = tf.shape(text, out_type=tf.int64)[0]
    # Words: each row's count, then each word's flat number.
    words_per_row = tf.where(
        word_index.row_lengths() > 0,
        tf.reduce_max(word_index, axis=1) + 1,
        0,
    )
    word_row_start = tf.cumsum(words_per_row, exclusive=True)
    num_words = tf.reduce_sum(words_per_row)
    flat_word = (
        tf.gather(word_row_start, word_index.value_rowids())
        + word_index.flat_values
    )
    word_start = tf.math.unsorted_segment_min(
        token_starts.flat_values, flat_word, num_words
    )
    word_end = tf.math.unsorted_segment_max(
        token_ends.flat_values, flat_word, num_words
    )

    # Each word's label and probability, from its one predicted position.
    predict = tf.where(windows["predict"] > 0)  # (n, 2): window, position
    chosen = tf.gather_nd(logits, predict)
    probabilities = tf.nn.softmax(chosen, axis=-1)
    label = tf.argmax(chosen, axis=-1, output_type=tf.int64)
    score = tf.reduce_max(probabilities, axis=-1)
    example = tf.gather(
        tf.cast(windows["example_index"], tf.int64), predict[:, 0]
    )
    word = tf.cast(tf.gather_nd(windows["word_index"], predict), tf.int64)
    target = (tf.gather(word_row_start, example) + word)[:, None]
    word_label = tf.scatter_nd(target, label, [num_words])
    word_score = tf.scatter_nd(target, score, [num_words])

    # conlleval's chunks: starts and ends from each word and its
    # neighbours (outside the row: O).
    prefix = tf.gather(tf.constant(prefixes, tf.int64), word_label)
    entity_type = tf.gather(tf.constant(types), word_label)
    row = tf.repeat(tf.range(batch), words_per_row)
    same_row_before = tf.concat([[False], row[1:] == row[:-1]], axis=0)[
        : tf.size(row)
    ]
    same_row_after = tf.concat([row[1:] == row[:-1], [False]], axis=0)[
        : tf.size(row)
    ]
    o = tf.constant(_O, tf.int64)
    previous = tf.where(
        same_row_before, tf.concat([[o], prefix[:-1]], 0)[: tf.size(row)], o
    )
    following = tf.where(
        same_row_after, tf.concat([prefix[1:], [o]], 0)[: tf.size(row)], o
    )
    previous_type = tf.where(
        same_row_before,
        tf.concat([[""], entity_type[:-1]], 0)[: tf.size(row)],
        "",
    )
    following_type = tf.where(
        same_row_after,
        tf.concat([entity_type[1:], [""]], 0)[: tf.size(row)],
        "",
    )
    starts = _start_of_chunk(previous, prefix, previous_type, entity_type)
    ends = _end_of_chunk(prefix, following, entity_type, following_type)
    first = tf.where(starts & (prefix != o))[:, 0]
    last = tf.where(ends & (prefix != o))[:, 0]

    entity_row = tf.gather(row, first)
    start = tf.gather(word_start, first)
    end = tf.gather(word_end, last)
    cumulative = tf.concat(
        [[0.0], tf.cumsum(tf.cast(word_score, tf.float64))], 0
    )
    mean_score = (
        tf.gather(cumulative, last + 1) - tf.gather(cumulative, first)
    ) / tf.cast(last - first + 1, tf.float64)
    # Offsets count the code points of the text decoded with U+FFFD per
    # invalid sequence (the tokenizer's decoding); substr must cut that.
    text = tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    entity_text = tf.strings.substr(
        tf.gather(text, entity_row), start, end - start, unit="UTF8_CHAR"
    )
    num_entities = tf.math.bincount(
        tf.cast(entity_row, tf.int32),
        minlength=tf.cast(batch, tf.int32),
        maxlength=tf.cast(batch, tf.int32),
    )

    def padded(name, values):
        ragged = tf.RaggedTensor.from_value_rowids(
            values, entity_row, nrows=batch
        )
        return ragged.to_tensor(default_value=ENTITY_PADDING[name])

    return {
        "entity": padded("entity", entity_text),
        "entity_type": padded("entity_type", tf.gather(entity_type, first)),
        "start": padded("start", tf.cast(start, tf.int32)),
        "end": padded("end", tf.cast(end, tf.int32)),
        "score": padded("score", tf.cast(mean_score, tf.float32)),
        "num_entities": num_entities,
    }


def _start_of_chunk(previous, tag, previous_type, entity_type):
    """conlleval's `startOfChunk`, elementwise on prefix codes and types."""
    return (
        (tag == _B)
        | (tag == _S)
        | (((previous == _E) | (previous == _S) | (previous == _O))
           & ((tag == _E) | (tag == _I)))
        | ((tag != _O) & (previous_type != entity_type))
    )  # fmt: skip


def _end_of_chunk(tag, following, entity_type, following_type):
    """conlleval's `endOfChunk` of `tag` followed by `following`."""
    return (
        (tag == _E)
        | (tag == _S)
        | (((tag == _B) | (tag == _I))
           & ((following == _B) | (following == _S) | (following == _O)))
        | ((tag != _O) & (entity_type != following_type))
    )  # fmt: skip
