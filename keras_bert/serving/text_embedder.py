"""Sentence embeddings from a `BertTextEmbedder`, inside a SavedModel."""

import tensorflow as tf

from keras_bert.serving.signatures import text_and_ids_endpoints


def text_embedder_endpoints(model, preprocessor, labels=None, pair=False):
    """`serving_default` on text, `embed_ids` on ids: one embedding each.

    `serving_default` takes `text`, a string tensor `(batch,)`, and returns
    `embedding`, float32 `(batch, hidden_dim)`: the model's embeddings,
    pooled and (if the model normalises) L2-normalised as the Keras model
    computes them. `embed_ids` takes the backbone's int32 inputs
    (`token_ids`, `segment_ids`, `padding_mask`, `(batch, sequence)`) and
    returns the same. Tokenizing, truncation to the preprocessor's
    `sequence_length` and padding run in the graph (TensorFlow and
    tensorflow-text only at serving time).

    Args:
        model: `keras_bert.BertTextEmbedder`.
        preprocessor: the `keras_bert.BertPreprocessor` to serve with (the
            model's own, which `export_saved_model` takes by default).
        labels: must be `None` (embeddings have no labels).
        pair: must be `False`: each text is embedded on its own.

    Returns a dict `name -> (function, input_signature)`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    embedder = keras_bert.BertTextEmbedder(backbone)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "film"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )
    path = keras_bert.serving.export_saved_model(
        embedder, preprocessor, "saved_models/embedder"
    )
    serve = tf.saved_model.load(path).signatures["serving_default"]
    serve(text=tf.constant(["a film"]))["embedding"]  # (1, 128)
    ```
    """
    if labels is not None:
        raise ValueError(
            "A BertTextEmbedder export produces embeddings, not labels; "
            f"received labels={labels!r}. Pass labels=None."
        )
    if pair:
        raise ValueError(
            "A BertTextEmbedder export embeds each text on its own, so it "
            "takes one `text` input; received pair=True. Pass pair=False "
            "and embed both sentences, then compare them "
            "(`keras_bert.similarity`)."
        )

    def embedding(inputs, text):
        embeddings = model(inputs, training=False)
        return {"embedding": tf.cast(embeddings, tf.float32)}

    return text_and_ids_endpoints(preprocessor, embedding, "embed_ids")
