"""The SavedModel endpoints of a `BertTokenClassifier`.

`serving_default` is `keras_bert.decoding.entities.entity_text_function`,
the function `BertTokenClassifier.predict` runs on raw text too, so TF
Serving tags raw strings of any length as `predict` does.
"""

import tensorflow as tf

from keras_bert.decoding.entities import entity_text_function
from keras_bert.decoding.entities import tag_labels
from keras_bert.serving.signatures import ids_signature


def token_classification_endpoints(
    model, preprocessor, labels=None, stride=None, trim=True
):
    """SavedModel endpoints of a token classifier.

    - `serving_default`: `text`, string `(batch,)` → the entities of each
      text: `entity`, `entity_type`, `start`, `end`, `score`
      `(batch, max_entities)` and `num_entities` `(batch,)`; see
      `keras_bert.decoding.entities.entity_text_function`.
    - `predict_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
      `(batch, sequence)` → `logits` float32 `(batch, sequence, classes)`,
      `label_id` int32 and `label` string `(batch, sequence)`.

    Args:
        model: `keras_bert.BertTokenClassifier`.
        preprocessor: `keras_bert.BertPreprocessor`: its tokenizer and its
            `sequence_length` (the window length).
        labels, stride, trim: `entity_text_function`'s options (the tags
            of the classes, the windows' stride, trimming).

    Returns a dict `name -> (function, input_signature)`.
    """
    serve_text = entity_text_function(
        model, preprocessor, labels=labels, stride=stride, trim=trim
    )
    label_table = tf.constant(tag_labels(model, labels))

    def serve_ids(token_ids, segment_ids, padding_mask):
        logits = tf.cast(
            model(
                {
                    "token_ids": token_ids,
                    "segment_ids": segment_ids,
                    "padding_mask": padding_mask,
                },
                training=False,
            ),
            tf.float32,
        )
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "label_id": label_id,
            "label": tf.gather(label_table, label_id),
        }

    return {
        "serving_default": serve_text,
        "predict_ids": (serve_ids, ids_signature()),
    }
