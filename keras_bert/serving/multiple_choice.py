"""The SavedModel endpoints of a `BertMultipleChoice`.

`serving_default` takes each example's context and its choices as raw
strings and packs every `(context, choice)` pair in the graph, as
`BertMultipleChoice.predict` packs them in Python (the same preprocessor,
so the same ids; tests/serving/test_multiple_choice.py).
"""

import tensorflow as tf

from keras_bert.decoding.text_functions import trim_to_longest_row
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS


def multiple_choice_endpoints(model, preprocessor, trim=True):
    """`serving_default` on text, `predict_ids` on ids.

    - `serving_default`: `context` string `(batch,)` and `choices` string
      `(batch, num_choices)` → `probabilities` float32 `(batch,
      num_choices)` (softmax of the logits) and `choice` int32 `(batch,)`
      (the index of the most probable choice). A request whose
      `context` and `choices` hold different numbers of examples, or with
      no choices (`num_choices == 0`), fails with an `InvalidArgument`
      error saying so. Ragged choice lists cannot be sent: a request's
      `choices` is one rectangular tensor (TF Serving's REST API refuses
      ragged rows).
    - `predict_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
      `(batch, num_choices, sequence)` → the same outputs.

    Args:
        model: `keras_bert.BertMultipleChoice`.
        preprocessor: the `keras_bert.BertPreprocessor` the model was
            trained with; packs `[CLS] context [SEP] choice [SEP]`.
        trim: bool. Whether the text endpoint runs the model only up to
            the request's longest row (the same outputs, faster).

    Returns a dict `name -> (function, input_signature)`.
    """

    def outputs(inputs):
        logits = tf.cast(model(inputs, training=False), tf.float32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "choice": tf.argmax(logits, axis=-1, output_type=tf.int32),
        }

    def serve_text(context, choices):
        batch = tf.shape(choices)[0]
        num_choices = tf.shape(choices)[1]
        checks = [
            tf.debugging.assert_equal(
                tf.shape(context)[0],
                batch,
                message=(
                    "choices must hold one row of choices per context; "
                    "the numbers of contexts and rows are"
                ),
            ),
            tf.debugging.assert_positive(
                num_choices,
                message=(
                    "choices holds no choice per example (shape [batch, "
                    "0]); send at least one choice per context"
                ),
            ),
        ]
        with tf.control_dependencies(checks):
            contexts = tf.repeat(context, num_choices)
        rows = preprocessor((contexts, tf.reshape(choices, [-1])))
        if trim:
            rows = trim_to_longest_row(rows)
        length = tf.shape(rows["token_ids"])[1]
        inputs = {
            name: tf.reshape(rows[name], [batch, num_choices, length])
            for name in BACKBONE_INPUTS
        }
        return outputs(inputs)

    def serve_ids(token_ids, segment_ids, padding_mask):
        return outputs(
            {
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            }
        )

    return {
        "serving_default": (
            serve_text,
            [
                tf.TensorSpec([None], tf.string, name="context"),
                tf.TensorSpec([None, None], tf.string, name="choices"),
            ],
        ),
        "predict_ids": (
            serve_ids,
            [
                tf.TensorSpec([None, None, None], tf.int32, name=name)
                for name in BACKBONE_INPUTS
            ],
        ),
    }
