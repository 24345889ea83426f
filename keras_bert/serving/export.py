"""Export a model and its preprocessor as one servable SavedModel."""

import os
import shutil
import tempfile

import keras
import tensorflow as tf

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.text.bert_preprocessor import BertPreprocessor

IDS_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def export_saved_model(
    model, preprocessor, export_dir, version=None, labels=None, pair=False
):
    """Writes `export_dir/<version>/`, a SavedModel for TensorFlow Serving.

    The tokenizer and the packing run inside the graph, so clients send raw
    UTF-8 text and the SavedModel needs only TensorFlow and
    tensorflow-text (whose ops TF Serving links in) — never keras_bert.

    Signatures of a `BertClassifier`:
        - `serving_default`: `text` (or `text_a` and `text_b` when `pair`),
          string `(batch,)` → `probabilities` float32 `(batch, classes)`,
          `label_id` int32 `(batch,)`, `label` string `(batch,)`; for a
          regressor (`num_classes=1`) → `score` float32 `(batch,)`.
        - `predict_ids`: `token_ids`, `segment_ids`, `padding_mask`, int32
          `(batch, sequence)` → the same outputs.

    Signatures of a `BertBackbone`:
        - `serving_default`: text in → `pooled_output` and
          `mean_pooled_output` (the mean of `sequence_output` over real
          tokens), float32 `(batch, hidden)`.
        - `embed_ids`: ids in → the same plus `sequence_output`.

    Versions are numbered directories, as TF Serving expects. An existing
    version is never overwritten, and the version appears only once it is
    complete (it is written to a temporary directory and renamed).

    Args:
        model: a `keras_bert.BertClassifier` or `keras_bert.BertBackbone`.
        preprocessor: the `keras_bert.BertPreprocessor` the model was
            trained with.
        export_dir: str. The model's base directory (`.../<model_name>`).
        version: int or `None`. `None` takes the next free version (1 for
            an empty directory).
        labels: list of str or `None`. The label of each class, for the
            `label` output. Defaults to `"0"`, `"1"`, ...
        pair: bool. Whether the model reads sentence pairs (`text_a`,
            `text_b`) instead of single texts (`text`).

    Returns:
        The path of the written version directory.

    Example:
    ```python
    path = keras_bert.serving.export_saved_model(
        classifier, preprocessor, "saved_models/sst2", labels=["neg", "pos"]
    )
    ```
    """
    if not isinstance(preprocessor, BertPreprocessor):
        raise ValueError(
            "Received an invalid value for argument `preprocessor`, expected "
            "a keras_bert.BertPreprocessor. Received: "
            f"preprocessor={preprocessor!r}"
        )
    outputs_fn, ids_name = _output_function(model, labels)
    version_dir = _new_version_dir(export_dir, version)

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(preprocessor)
    text_names = ("text_a", "text_b") if pair else ("text",)
    text_signature = [
        tf.TensorSpec([None], tf.string, name=name) for name in text_names
    ]
    if pair:

        def serve_text(text_a, text_b):
            return outputs_fn(preprocessor((text_a, text_b)), text=True)

    else:

        def serve_text(text):
            return outputs_fn(preprocessor(text), text=True)

    def serve_ids(token_ids, segment_ids, padding_mask):
        inputs = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
        }
        return outputs_fn(inputs, text=False)

    ids_signature = [
        tf.TensorSpec([None, None], tf.int32, name=name) for name in IDS_INPUTS
    ]
    archive.add_endpoint("serving_default", serve_text, text_signature)
    archive.add_endpoint(ids_name, serve_ids, ids_signature)

    parent = os.path.dirname(version_dir)
    staging = tempfile.mkdtemp(prefix=".export-", dir=parent)
    try:
        archive.write_out(staging, verbose=False)
        try:
            os.rename(staging, version_dir)
        except OSError as error:
            raise FileExistsError(
                f"Version directory {version_dir} appeared while exporting; "
                "nothing was overwritten. Export again to take the next "
                "free version."
            ) from error
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging)
    return version_dir


def _output_function(model, labels):
    """Returns `(fn(inputs, text) -> outputs dict, ids signature name)`."""
    if isinstance(model, BertClassifier):
        num_classes = model.num_classes
        if num_classes == 1:
            if labels is not None:
                raise ValueError(
                    "A regression model (num_classes=1) has no labels; "
                    f"received labels={labels!r}. Pass labels=None."
                )

            def regression(inputs, text):
                scores = model(inputs, training=False)
                return {"score": tf.cast(scores[:, 0], tf.float32)}

            return regression, "predict_ids"
        if labels is None:
            labels = [str(i) for i in range(num_classes)]
        labels = [str(label) for label in labels]
        if len(labels) != num_classes:
            raise ValueError(
                f"The model has {num_classes} classes but {len(labels)} "
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

        return classification, "predict_ids"

    if isinstance(model, BertBackbone):
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

        return embedding, "embed_ids"

    raise ValueError(
        "export_saved_model exports a keras_bert.BertClassifier or "
        f"keras_bert.BertBackbone; received a {type(model).__name__}. For "
        "a BertMaskedLM export its `.backbone`."
    )


def _new_version_dir(export_dir, version):
    os.makedirs(export_dir, exist_ok=True)
    existing = [
        int(name)
        for name in os.listdir(export_dir)
        if name.isdigit() and os.path.isdir(os.path.join(export_dir, name))
    ]
    if version is None:
        version = max(existing, default=0) + 1
    if not isinstance(version, int) or version <= 0:
        raise ValueError(
            "Received an invalid value for argument `version`, expected a "
            f"positive integer or None. Received: version={version!r}"
        )
    path = os.path.join(export_dir, str(version))
    if os.path.exists(path):
        raise FileExistsError(
            f"{path} already exists and is never overwritten. Pass another "
            f"`version` (next free: {max(existing, default=0) + 1}) or "
            "version=None."
        )
    return path
