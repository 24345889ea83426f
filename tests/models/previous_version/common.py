"""What the generations of files in `previous_version/` share.

A generation is a folder named after the commit whose code wrote it. It
holds `make_files.py`, run once at that commit, and what it wrote: tiny
models' `.keras` and `.weights.h5` files, SavedModel exports packed as
`<name>.tar.xz` (their graphs hold the tokenizer's tables, a few MB that
xz packs to ~180 kB), and `expected.npz`, what each gave when written.
`tests/models/test_previous_version_files.py` checks every generation
against the code as it is now.

A generation's `make_files.py` defines:
    CLASSES: `{stem: class name}`, one `<stem>.keras` file each.
    WEIGHTS: the stems that have a `<stem>.weights.h5` file too.
    build(stem): a new model of that stem's architecture, for
        `load_weights`, with names that exist now.
    model_inputs(stem): the inputs the stem's outputs were recorded on.
    EXPORTS: `{export name: (stem, export options)}`: what
        `keras_bert.serving.export_saved_model(model, preprocessor(), ...,
        **options)` of the stem's model answered on `TEXTS`.
    KEPT_EXPORTS: the export names whose SavedModel is kept.
    SLOW_EXPORTS: the export names whose export from the loaded model
        runs in the slow suite only (an export takes seconds).
    main(): writes the files.

To add a generation at a commit whose files later versions must load:
make `previous_version/<commit>/` with an empty `__init__.py` and a
`make_files.py` that writes what the earlier generations lack; copy this
folder into a checkout of that commit and run, there,
`python -m tests.models.previous_version.<commit>.make_files`; copy the
written files back. The inputs below are shared by every generation:
add new ones beside them, never change them.
"""

import os
import shutil
import tarfile

import numpy as np

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
SEQUENCE_LENGTH = 12  # the exports' preprocessor


def tiny_backbone(**kwargs):
    import keras_bert

    return keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        **kwargs,
    )


def preprocessor():
    import keras_bert

    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    return keras_bert.BertPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )


def flatten(name, outputs):
    """`{name/key: array}` of a dict of outputs, `{name: array}` of one."""
    if isinstance(outputs, dict):
        return {f"{name}/{key}": np.asarray(v) for key, v in outputs.items()}
    return {name: np.asarray(outputs)}


def plain(array):
    """Strings as unicode arrays, which `np.load` reads without pickle."""
    if array.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8"), otypes=[str])(array)
    return array


def serve(path):
    """What the SavedModel at `path` answers on `TEXTS`."""
    import tensorflow as tf

    outputs = tf.saved_model.load(path).signatures["serving_default"](
        text=tf.constant(TEXTS)
    )
    return {key: plain(v.numpy()) for key, v in outputs.items()}


def write_models(folder, models, weights, model_inputs):
    """Saves each of `models` (`{stem: model}`) as `<stem>.keras`, and
    those in `weights` as `<stem>.weights.h5` too, in `folder`; returns
    their outputs on `model_inputs(stem)`, flattened."""
    expected = {}
    for stem, model in models.items():
        model.save(os.path.join(folder, f"{stem}.keras"))
        if stem in weights:
            model.save_weights(os.path.join(folder, f"{stem}.weights.h5"))
        expected.update(flatten(stem, model(model_inputs(stem))))
    return expected


def write_exports(folder, models, exports, kept):
    """Exports each of `exports` (`{name: (stem, options)}`) of `models`;
    returns their answers on `TEXTS`, flattened. The SavedModels of `kept`
    are packed in `folder` as `<name>.tar.xz`; the others are deleted."""
    import tempfile

    import keras_bert

    expected = {}
    for name, (stem, options) in exports.items():
        directory = os.path.join(
            folder if name in kept else tempfile.mkdtemp(), name
        )
        shutil.rmtree(directory, ignore_errors=True)
        path = keras_bert.serving.export_saved_model(
            models[stem], preprocessor(), directory, version=1, **options
        )
        expected.update(flatten(name, serve(path)))
        if name in kept:
            pack_export(directory)
        else:
            shutil.rmtree(directory)
    return expected


def pack_export(directory):
    """Replaces the export directory by `<directory>.tar.xz`."""
    with tarfile.open(f"{directory}.tar.xz", "w:xz") as archive:
        archive.add(directory, arcname=os.path.basename(directory))
    shutil.rmtree(directory)


def unpack_export(folder, name, destination):
    """Extracts `folder/<name>.tar.xz` (see `pack_export`) into
    `destination`; returns the export's version 1 directory."""
    with tarfile.open(os.path.join(folder, f"{name}.tar.xz")) as archive:
        archive.extractall(destination, filter="data")
    return os.path.join(destination, name, "1")
