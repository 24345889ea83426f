"""A multi-label export answers as the model: probabilities and names."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving import export_saved_model
from keras_bert.serving.rest import rest_predict
from tests.models.test_multi_label_classifier import LABELS
from tests.models.test_multi_label_classifier import tagger
from tests.models.test_raw_text import TEXTS
from tests.models.test_raw_text import ids


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = tagger()
    model.fit(TEXTS, LABELS, batch_size=3, seed=0, verbose=0)
    # Thresholds that split this model's outputs (a tiny model's
    # probabilities sit near 0.5), each label on for some texts only: the
    # middle of the widest gap between a label's probabilities.
    probabilities = np.sort(model.predict(TEXTS, verbose=0), axis=0)
    gaps = np.diff(probabilities, axis=0)
    widest = gaps.argmax(axis=0)
    model.thresholds = [
        float(probabilities[i, label] + gaps[i, label] / 2)
        for label, i in enumerate(widest)
    ]
    path = export_saved_model(
        model, export_dir=str(tmp_path_factory.mktemp("export"))
    )
    return model, tf.saved_model.load(path)


def test_serving_default_equals_predict(exported):
    model, saved = exported
    outputs = saved.signatures["serving_default"](text=tf.constant(TEXTS))
    assert sorted(outputs) == ["labels", "probabilities"]
    expected = model.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(), expected, rtol=0, atol=1e-6
    )
    # The names are those over threshold of the probabilities served
    # (the tiny model's rows differ by less than float rounding at
    # times, so not always of those `predict` gives).
    served = outputs["labels"].numpy()
    names = [[name.decode() for name in row if name] for row in served]
    assert names == model.predicted_labels(outputs["probabilities"].numpy())
    assert 0 < sum(map(len, names)) < 3 * len(TEXTS)  # the test can fail
    assert outputs["labels"].shape == (len(TEXTS), 3)
    by_ids = saved.signatures["predict_ids"](
        **{k: tf.constant(v) for k, v in ids(TEXTS).items()}
    )
    np.testing.assert_allclose(
        by_ids["probabilities"].numpy(), expected, rtol=0, atol=1e-6
    )


def test_rest_rows_hold_names_and_padding(exported):
    model, saved = exported
    response = rest_predict(saved, {"instances": TEXTS[:2]})
    rows = response["predictions"]
    expected = model.predicted_labels([row["probabilities"] for row in rows])
    for row, names in zip(rows, expected):
        assert row["labels"] == names + [""] * (3 - len(names))
        assert len(row["probabilities"]) == 3


def test_a_tagger_reading_windows_serves_documents(tmp_path):
    """With `doc_stride`, `serving_default` cuts the windows in the graph
    and `predict_ids` takes them `(batch, windows, sequence)`: both give
    `predict`'s probabilities, one row per document."""
    model = tagger(doc_stride=5)
    documents = [" ".join(TEXTS * 3), TEXTS[0]]
    expected = model.predict(documents, verbose=0)
    saved = tf.saved_model.load(
        export_saved_model(model, export_dir=str(tmp_path))
    )
    outputs = saved.signatures["serving_default"](text=tf.constant(documents))
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(), expected, rtol=0, atol=1e-6
    )
    windows = model._text_packer()(tf.constant(documents))
    assert windows["token_ids"].shape[1] > 10
    by_ids = saved.signatures["predict_ids"](**windows)
    np.testing.assert_allclose(
        by_ids["probabilities"].numpy(), expected, rtol=0, atol=1e-6
    )
