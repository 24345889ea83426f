"""Writes the files of `tests/models/test_previous_version_files.py`.

Run once at a commit whose files later versions must still load (these
were written at a68cf67, the last commit before issue 29's redesign):

    python tests/models/previous_version/make_files.py

For every model class: a tiny model's `.keras` file and `.weights.h5`
file; for a classifier, a token classifier and a backbone, a raw-text
SavedModel export; and `expected.npz`, what each gave when written.
"""

import os
import shutil
import tempfile

import numpy as np

import keras_bert

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = (
    "the a film was great dull and not very good bad movie it plot actors "
    "paris london alice bob lives in works at acme"
).split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
TEXTS = ["the film was great", "a very dull movie and not good", "bob"]
INPUTS = {
    "token_ids": np.array([[2, 5, 7, 9, 3, 0], [2, 11, 12, 3, 13, 3]]),
    "segment_ids": np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1]]),
    "padding_mask": np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]]),
}
MASKED_POSITIONS = np.array([[1, 3], [2, 4]])
HEADS = {
    "BertClassifier": dict(num_classes=3),
    "BertMaskedLM": {},
    "BertQuestionAnswerer": {},
    "BertTokenClassifier": dict(
        num_classes=5, labels=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    ),
}


def tiny_backbone():
    return keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )


def model_inputs(name):
    if name == "BertMaskedLM":
        return {**INPUTS, "masked_positions": MASKED_POSITIONS}
    return INPUTS


def flatten(name, outputs):
    if isinstance(outputs, dict):
        return {f"{name}/{key}": np.asarray(v) for key, v in outputs.items()}
    return {name: np.asarray(outputs)}


def _plain(array):
    """Strings as unicode arrays, which `np.load` reads without pickle."""
    if array.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8"), otypes=[str])(array)
    return array


def main():
    import keras

    keras.utils.set_random_seed(29)
    expected = {}
    models = {"BertBackbone": tiny_backbone()}
    for name, kwargs in HEADS.items():
        models[name] = getattr(keras_bert, name)(tiny_backbone(), **kwargs)
    for name, model in models.items():
        model.save(os.path.join(HERE, f"{name}.keras"))
        model.save_weights(os.path.join(HERE, f"{name}.weights.h5"))
        expected.update(flatten(name, model(model_inputs(name))))

    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=12)
    exports = {
        "BertClassifier": dict(labels=["neg", "neutral", "pos"]),
        "BertTokenClassifier": {},
        "BertBackbone": {},
    }
    for name, options in exports.items():
        # The classifier's export is kept (it must still load); the others
        # only give their outputs.
        directory = os.path.join(
            HERE if name == "BertClassifier" else tempfile.mkdtemp(),
            f"{name}_export",
        )
        shutil.rmtree(directory, ignore_errors=True)
        path = keras_bert.serving.export_saved_model(
            models[name], preprocessor, directory, version=1, **options
        )
        import tensorflow as tf

        serve = tf.saved_model.load(path).signatures["serving_default"]
        outputs = serve(text=tf.constant(TEXTS))
        expected.update(
            flatten(
                f"{name}_export",
                {k: _plain(v.numpy()) for k, v in outputs.items()},
            )
        )
        if name == "BertClassifier":
            pack_export(directory)
    np.savez(os.path.join(HERE, "expected.npz"), **expected)


def pack_export(directory):
    """Replaces the export directory by `<directory>.tar.xz`: its graph
    holds the tokenizer's tables (5.3 MB), which xz packs to ~180 kB."""
    import tarfile

    with tarfile.open(f"{directory}.tar.xz", "w:xz") as archive:
        archive.add(directory, arcname=os.path.basename(directory))
    shutil.rmtree(directory)


def unpack_export(name, destination):
    """Extracts `<name>.tar.xz` (see `pack_export`) into `destination`;
    returns the export's version 1 directory."""
    import tarfile

    with tarfile.open(os.path.join(HERE, f"{name}.tar.xz")) as archive:
        archive.extractall(destination, filter="data")
    return os.path.join(destination, name, "1")


if __name__ == "__main__":
    main()
