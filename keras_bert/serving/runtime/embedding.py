"""How a served `BertEmbedding` computes: its serving form.

A served copy's embedding holds `served_embedding` as its `served_call`
(set by `keras_bert.serving.served_copy`): the inference
`BertEmbedding.call` computes, refusing ids out of the vocabulary, with its
LayerNorm in the form TensorFlow's CPU remapper fuses (`remapper_forms`)
where the export's plan runs those forms, else Keras' own
(`served_embedding_without_forms`).
"""

import functools

from keras import ops

from keras_bert.serving.runtime import remapper_forms as forms


def served_embedding(embedding, token_ids, segment_ids, remapper_forms=True):
    """The three embeddings gathered (an id out of range is an error, where
    Keras' `take` would wrap a negative one), summed and normalized by one
    `_MklLayerNorm` (with `remapper_forms`) or by the embedding's Keras
    `LayerNormalization`.

    Args:
        embedding: a built `keras_bert.layers.BertEmbedding`.
        token_ids: int tensor `(batch_size, sequence_length)`.
        segment_ids: int tensor `(batch_size, sequence_length)`.
        remapper_forms: bool. Defaults to `True`.

    Returns a tensor `(batch_size, sequence_length, hidden_dim)`.
    """
    import tensorflow as tf

    dtype = embedding.compute_dtype
    if embedding.token_embedding.quantization_mode is None:
        table = ops.cast(embedding.token_embedding.embeddings, dtype)
        x = tf.gather(table, token_ids)
    else:
        x = embedding.token_embedding(token_ids)
    segments = ops.cast(embedding.segment_embedding.embeddings, dtype)
    x = x + tf.gather(segments, segment_ids)
    length = forms.shape(token_ids)[1]
    positions = ops.cast(embedding.position_embedding.embeddings, dtype)
    x = x + tf.slice(positions, [0, 0], tf.stack([length, -1]))
    if not remapper_forms:
        return embedding.layer_norm(x)
    rows = forms.layer_norm(
        tf.reshape(x, (-1, embedding.hidden_dim)),
        ops.cast(embedding.layer_norm.gamma, "float32"),
        ops.cast(embedding.layer_norm.beta, "float32"),
        embedding.layer_norm_epsilon,
    )
    return tf.reshape(rows, tf.shape(x))


served_embedding_without_forms = functools.partial(
    served_embedding, remapper_forms=False
)
