"""Labels (or scores) from a `BertClassifier`, inside a SavedModel."""

import tensorflow as tf

from keras_bert.serving.signatures import text_and_ids_endpoints


def classifier_endpoints(
    model, preprocessor, labels=None, pair=False, trim=True
):
    """`serving_default` on text, `predict_ids` on ids.

    Both return `probabilities` float32 `(batch, classes)`, `label_id`
    int32 `(batch,)` and `label` string `(batch,)`; a regressor
    (`num_classes=1`) returns `score` float32 `(batch,)`.

    Args:
        model: `keras_bert.BertClassifier`.
        preprocessor: the `keras_bert.BertPreprocessor` the model was
            trained with.
        labels: list of str or `None`. The label of each class.
            Defaults to `"0"`, `"1"`, ...
        pair: bool. Whether the text endpoint takes `text_a` and
            `text_b`.
        trim: bool. Whether the text endpoint runs the model only up to
            the request's longest row (the same outputs, faster; see
            `keras_bert.serving.signatures.text_and_ids_endpoints`).

    Returns a dict `name -> (function, input_signature)`.
    """
    if model.num_classes == 1:
        if labels is not None:
            raise ValueError(
                "A regression model (num_classes=1) has no labels; "
                f"received labels={labels!r}. Pass labels=None."
            )

        def regression(inputs, text):
            scores = model(inputs, training=False)
            return {"score": tf.cast(scores[:, 0], tf.float32)}

        return text_and_ids_endpoints(
            preprocessor, regression, "predict_ids", pair, trim
        )
    if labels is None:
        labels = [str(i) for i in range(model.num_classes)]
    labels = [str(label) for label in labels]
    if len(labels) != model.num_classes:
        raise ValueError(
            f"The model has {model.num_classes} classes but {len(labels)} "
            f"labels were given ({labels}). Pass one label per class."
        )
    label_table = tf.constant(labels)

    def classification(inputs, text):
        logits = tf.cast(model(inputs, training=False), tf.float32)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(label_table, label_id),
        }

    return text_and_ids_endpoints(
        preprocessor, classification, "predict_ids", pair, trim
    )
