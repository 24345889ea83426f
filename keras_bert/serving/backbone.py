"""Sentence embeddings from a `BertBackbone`, inside a SavedModel."""

import tensorflow as tf

from keras_bert.serving.signatures import text_and_ids_endpoints


def backbone_endpoints(model, preprocessor, labels=None, pair=False, trim=True):
    """`serving_default` on text, `embed_ids` on ids: embeddings.

    Both return `pooled_output` and `mean_pooled_output` (the mean of
    `sequence_output` over real tokens), float32 `(batch, hidden)`;
    `embed_ids` adds `sequence_output`. See
    `keras_bert.serving.export_saved_model`.

    Args:
        model: `keras_bert.BertBackbone`.
        preprocessor: the `keras_bert.BertPreprocessor` to serve with.
        labels: must be `None` (a backbone has no labels).
        pair: bool. Whether the text endpoint takes `text_a` and
            `text_b`.
        trim: bool. Whether the text endpoint runs the model only up to
            the request's longest row (the same outputs, faster; see
            `keras_bert.serving.signatures.text_and_ids_endpoints`).

    Returns a dict `name -> (function, input_signature)`.
    """
    if labels is not None:
        raise ValueError(
            "A BertBackbone export produces embeddings, not labels; "
            f"received labels={labels!r}. Pass labels=None."
        )

    def embedding(inputs, text):
        outputs = model(inputs, training=False)
        sequence = tf.cast(outputs["sequence_output"], tf.float32)
        mask = tf.cast(inputs["padding_mask"], tf.float32)[:, :, None]
        count = tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
        result = {
            "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
            "mean_pooled_output": tf.reduce_sum(sequence * mask, 1) / count,
        }
        if not text:
            result["sequence_output"] = sequence
        return result

    return text_and_ids_endpoints(
        preprocessor, embedding, "embed_ids", pair, trim
    )
