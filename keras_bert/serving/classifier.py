"""Labels (or scores) from a `BertClassifier`, inside a SavedModel."""

import tensorflow as tf

from keras_bert.decoding.multi_labels import labels_over_thresholds
from keras_bert.serving.signatures import text_and_ids_endpoints


def classifier_endpoints(
    model, preprocessor, labels=None, pair=None, trim=True
):
    """`serving_default` on text, `predict_ids` on ids.

    Both return `probabilities` float32 `(batch, classes)`, `label_id`
    int32 `(batch,)` and `label` string `(batch,)`; a regressor
    (`num_classes=1`) returns `score` float32 `(batch,)`. A model built
    with `doc_stride` reads each text whole: `serving_default` cuts it
    into the model's windows in the graph
    (`keras_bert.text.document_windows`; an empty text fails the request
    with an `InvalidArgumentError` naming its row) and returns the same
    outputs, one row per text; `predict_ids` takes the windows,
    `(batch, windows, sequence)`. A multi-label model
    (`multi_label=True`) returns `probabilities` float32
    `(batch, labels)` (sigmoids) and `labels` string `(batch, labels)`:
    in each row the names over their threshold (`model.thresholds`), in
    label order, then `""` (`keras_bert.decoding.labels_over_thresholds`).

    Args:
        model: `keras_bert.BertClassifier`.
        preprocessor: the `keras_bert.BertPreprocessor` the model was
            trained with.
        labels: list of str or `None`. The label of each class.
            Defaults to the model's `label_names`, else `"0"`, `"1"`, ...
        pair: bool or `None`. Whether the text endpoint takes `text_a` and
            `text_b`. `None` (the default): as the model reads text
            (`model.pair`, which `fit` records; single texts where it is
            not known). A value that contradicts `model.pair` is an error.
        trim: bool. Whether the text endpoint runs the model only up to
            the request's longest row (the same outputs, faster; see
            `keras_bert.serving.signatures.text_and_ids_endpoints`).

    Returns a dict `name -> (function, input_signature)`.
    """
    pair = served_pair(model, pair)
    windows = getattr(model, "doc_stride", None) is not None
    if windows:
        if pair:
            raise ValueError(
                f"Received pair={pair}, but the classifier reads documents "
                f"in windows (doc_stride={model.doc_stride}), single texts "
                "only. Leave out `pair`."
            )
        preprocessor = model.document_windows(preprocessor)
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
            preprocessor, regression, "predict_ids", pair, trim, windows
        )
    if labels is None:
        labels = getattr(model, "label_names", None)
    if labels is None:
        labels = [str(i) for i in range(model.num_classes)]
    labels = [str(label) for label in labels]
    if len(labels) != model.num_classes:
        raise ValueError(
            f"The model has {model.num_classes} classes but {len(labels)} "
            f"labels were given ({labels}). Pass one label per class."
        )
    label_table = tf.constant(labels)

    if getattr(model, "multi_label", False):
        thresholds = tf.constant(model.thresholds, tf.float32)

        def multi_label(inputs, text):
            logits = tf.cast(model(inputs, training=False), tf.float32)
            probabilities = tf.sigmoid(logits)
            return {
                "probabilities": probabilities,
                "labels": labels_over_thresholds(
                    probabilities, thresholds, label_table
                ),
            }

        return text_and_ids_endpoints(
            preprocessor, multi_label, "predict_ids", pair, trim, windows
        )

    def classification(inputs, text):
        logits = tf.cast(model(inputs, training=False), tf.float32)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(label_table, label_id),
        }

    return text_and_ids_endpoints(
        preprocessor, classification, "predict_ids", pair, trim, windows
    )


def served_pair(model, pair):
    """Whether `model`'s text endpoint takes pairs: `pair`, or, for
    `None`, the layout the model recorded (`model.pair`; single texts
    where it recorded none).

    Raises:
        ValueError: `pair` contradicts `model.pair`, naming both.
    """
    recorded = getattr(model, "pair", None)
    if pair is None:
        return bool(recorded)
    if pair not in (True, False):
        raise ValueError(
            "Received an invalid value for argument `pair`, expected True, "
            f"False or None. Received: pair={pair!r}"
        )
    if recorded is not None and pair != recorded:
        layouts = {True: "sentence pairs", False: "single texts"}
        raise ValueError(
            f"Received pair={pair}, but the {type(model).__name__} reads "
            f"{layouts[recorded]} (its `pair` is {recorded}, from its "
            f"constructor or `fit`): exported with pair={pair} it would "
            f"serve {layouts[pair]} it was never trained on. Leave out "
            f"`pair` (or pass pair={recorded}) to export what it reads."
        )
    return pair
