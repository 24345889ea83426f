"""Named entities of raw texts from a Keras token classifier, in Python.

`find_entities` is the Keras-side twin of the SavedModel's
`serving_default` (`keras_bert.decoding.entities`, graph ops): the
same words (BERT's basic-tokenizer words; a `##` WordPiece continues one),
windows and one prediction per word, then the entities found by
`metrics.get_entities` (conlleval's rules, written in Python) instead of
graph ops. Use it to tag texts without
exporting, and to check an export.
"""

import numpy as np
import tensorflow as tf

from keras_bert.training.ner_features import INPUT_NAMES
from keras_bert.training.ner_features import default_stride
from keras_bert.training.ner_features import window_tokens
from keras_bert.training.ner_features import word_predictions
from keras_bert.training.ner_metrics import get_entities


def find_entities(model, preprocessor, texts, stride=None, batch_size=64):
    """The entities of each text, as the exported model returns them.

    Args:
        model: `keras_bert.BertTokenClassifier` with BIO `labels`.
        preprocessor: `keras_bert.BertPreprocessor`: its tokenizer and
            `sequence_length` (the window length).
        texts: list of str.
        stride: int or `None`. Tokens between window starts; defaults to
            half a window.
        batch_size: int. Windows per prediction batch.

    Returns:
        One list per text of dicts `{"entity", "type", "start", "end",
        "score"}`, in text order; `text[start:end] == entity`.

    Example:
    ```python
    entities = find_entities(model, preprocessor, ["Angela Merkel spoke."])
    # [[{"entity": "Angela Merkel", "type": "PER", "start": 0, "end": 13,
    #    "score": 0.99}]]
    ```
    """
    tagged = tag_texts(
        model, preprocessor, texts, model.label_names, stride, batch_size
    )
    return [text_entities(text, tags) for text, tags in zip(texts, tagged)]


def tag_texts(model, preprocessor, texts, labels, stride=None, batch_size=64):
    """The words of each text, their character spans and predicted tags.

    Words as `find_entities` cuts them (BERT's basic-tokenizer words; a
    `##` WordPiece continues one), each predicted once, from the window
    where it has the most context.

    Args:
        model: a tagger taking the ids dict (`keras_bert.
            BertTokenClassifier`, `keras_bert.models.FrozenFeaturesTagger`).
        preprocessor: `keras_bert.BertPreprocessor`: its tokenizer and
            `sequence_length` (the window length).
        texts: list of str.
        labels: list of str. The tag of each class.
        stride: int or `None`. Tokens between window starts; defaults to
            half a window.
        batch_size: int. Windows per prediction batch.

    Returns:
        One dict per text: `spans` (`[start, end]` per word, in code
        points), `tags` (str per word) and `scores` (the probability of
        each word's tag, a float32 array).

    Example:
    ```python
    tag_texts(model, preprocessor, ["Angela Merkel spoke."], labels)
    # [{"spans": [[0, 6], [7, 13], [14, 19], [19, 20]],
    #   "tags": ["B-PER", "I-PER", "O", "O"], "scores": [...]}]
    ```
    """
    sequence_length = preprocessor.sequence_length
    stride = default_stride(sequence_length) if stride is None else stride
    tokenizer = preprocessor.tokenizer
    vocabulary = tokenizer.vocabulary
    results = []
    for first in range(0, len(texts), 256):
        chunk = list(texts[first : first + 256])
        ids, starts, ends = tokenizer.tokenize_with_offsets(
            tf.constant(chunk, tf.string, shape=[len(chunk)])
        )
        ids, starts, ends = ids.to_list(), starts.to_list(), ends.to_list()
        word_index, spans = [], []
        for row_ids, row_starts, row_ends in zip(ids, starts, ends):
            words, row_spans = [], []
            for token, start, end in zip(row_ids, row_starts, row_ends):
                if not vocabulary[token].startswith("##") or not row_spans:
                    row_spans.append([start, end])
                else:
                    row_spans[-1][1] = end
                words.append(len(row_spans) - 1)
            word_index.append(words)
            spans.append(row_spans)
        features = window_tokens(
            tokenizer,
            tf.ragged.constant(ids, tf.int64, ragged_rank=1),
            tf.ragged.constant(word_index, tf.int64, ragged_rank=1),
            sequence_length,
            stride,
        )
        features = {name: value.numpy() for name, value in features.items()}
        logits = model.predict(
            {name: features[name] for name in INPUT_NAMES},
            batch_size=batch_size,
            verbose=0,
        )
        label_ids, scores = word_predictions(
            features,
            np.asarray(logits, np.float32),
            [len(row) for row in spans],
            outside_id=labels.index("O") if "O" in labels else 0,
        )
        for row_spans, row_labels, row_scores in zip(spans, label_ids, scores):
            results.append(
                {
                    "spans": row_spans,
                    "tags": [labels[i] for i in row_labels],
                    "scores": row_scores,
                }
            )
    return results


def text_entities(text, tagged):
    """The entities of `text` from `tag_texts`' result for it: dicts
    `{"entity", "type", "start", "end", "score"}` (the score: the mean of
    its words' tag probabilities)."""
    spans, scores = tagged["spans"], tagged["scores"]
    entities = []
    for entity_type, first_word, last_word in get_entities(tagged["tags"]):
        start, end = spans[first_word][0], spans[last_word][1]
        entities.append(
            {
                "entity": text[start:end],
                "type": entity_type,
                "start": start,
                "end": end,
                "score": float(np.mean(scores[first_word : last_word + 1])),
            }
        )
    return entities
