"""The `tf.data` pipelines that tokenize a task model's raw text.

Where the pipeline is built from Python lists or arrays, every text is
tokenized once in a parallel `tf.data` map (`keras_bert.data.pack_texts`,
as the GLUE recipe does) and batched as the recipes batch
(`keras_bert.data.packed_batches`: in order for `evaluate` and `predict`;
for `fit`, shuffled per epoch into batches of like-length rows); a
`tf.data.Dataset` of strings is mapped through the preprocessor batch by
batch. Either way each batch is cut to its longest row.
"""

import math

import numpy as np
import tensorflow as tf

from keras_bert.data.packed_batches import pack_texts
from keras_bert.data.packed_batches import packed_batches
from keras_bert.data.trim_batch import trim_batch
from keras_bert.data.window_batches import pack_windows
from keras_bert.data.window_batches import window_batches
from keras_bert.models.text_inputs import check_labels
from keras_bert.models.text_inputs import dataset_text_layout
from keras_bert.models.text_inputs import is_text
from keras_bert.models.text_inputs import texts_of
from keras_bert.text.document_windows import DocumentWindows
from keras_bert.text.document_windows import check_documents


def fit_dataset(
    preprocessor,
    to_inputs,
    x,
    y,
    sample_weight=None,
    batch_size=None,
    shuffle=True,
    seed=None,
    initial_epoch=0,
    epochs=1,
    needs_labels=True,
):
    """The training batches `fit` builds from texts in lists or arrays.

    Every text is tokenized once; with `shuffle`, each epoch is shuffled
    with a seed made from `seed` and its number, cut into groups of 50
    batches and each group sorted by length
    (`keras_bert.data.length_grouped_epochs`, as the recipes'
    `--group_by_length`); each batch is cut to its longest row.

    Documents read in windows (`preprocessor` a
    `keras_bert.text.document_windows.DocumentWindows`) are cut once and
    batched whole the same way (`keras_bert.data.window_batches`), ordered
    by their token counts.

    Args:
        preprocessor: `keras_bert.BertPreprocessor`, or `DocumentWindows`.
        to_inputs: callable or `None`. The model's inputs from a batch
            of packed features and the whole input's (`None`: the
            packed features are the inputs).
        x: texts, or a pair `(texts_a, texts_b)`.
        y: labels, one per text.
        sample_weight: array `(num_texts,)` or `None`.
        batch_size: int or `None` (32).
        shuffle: bool. Shuffle per epoch (in like-length groups).
        seed: int or `None`. Seed of the data order; `None` draws one
            from NumPy's global generator (which
            `keras.utils.set_random_seed` seeds).
        initial_epoch: int. The first epoch of the run (0-based).
        epochs: int. The run's number of epochs.
        needs_labels: bool. Whether `y=None` is refused (a distiller
            trains on unlabelled texts too).

    Returns:
        `(dataset, steps_per_epoch)`: all of the run's epochs, one after
        the other, and the steps of one.
    """
    if y is None and needs_labels:
        raise ValueError(
            "`fit` on raw text needs labels: pass `y` (one per text), or a "
            "`tf.data.Dataset` of `(texts, labels)` batches."
        )
    texts = texts_of(x)
    y = check_labels(y, len(texts[0]))
    sample_weight = check_labels(sample_weight, len(texts[0]), "sample_weight")
    batch_size = batch_size or 32
    if seed is None:
        seed = int(np.random.randint(2**31 - 1))
    features, batches = _pack_all(preprocessor, texts)
    dataset = batches(
        features,
        y,
        batch_size,
        shuffle=bool(shuffle),
        seed=seed,
        first_epoch=initial_epoch if shuffle else None,
        num_epochs=epochs if shuffle else None,
        group_by_length=bool(shuffle),
        sample_weight=sample_weight,
    )
    if not shuffle:
        dataset = dataset.repeat(epochs - initial_epoch)
    dataset = _map_inputs(dataset, to_inputs, features)
    return dataset, math.ceil(len(texts[0]) / batch_size)


def inference_dataset(
    preprocessor, to_inputs, x, y=None, sample_weight=None, batch_size=None
):
    """The batches `evaluate` and `predict` read texts from, in order.

    Texts in lists or arrays are tokenized once, then batched in order,
    each batch cut to its longest row; a `tf.data.Dataset` is mapped
    through the preprocessor (`text_dataset`).

    Args:
        preprocessor: `keras_bert.BertPreprocessor`, or `DocumentWindows`
            (documents batched whole, as `fit_dataset` batches them).
        to_inputs: callable or `None`. The model's inputs from a batch
            of packed features and the whole input's (`None` for a
            dataset, whose whole is not known ahead).
        x: texts, a pair `(texts_a, texts_b)`, or a `tf.data.Dataset` of
            text batches (with labels).
        y: labels or `None`.
        sample_weight: array or `None`.
        batch_size: int or `None` (32).
    """
    if isinstance(x, tf.data.Dataset):
        return text_dataset(x, preprocessor, to_inputs)
    texts = texts_of(x)
    y = check_labels(y, len(texts[0]))
    sample_weight = check_labels(sample_weight, len(texts[0]), "sample_weight")
    features, batches = _pack_all(preprocessor, texts)
    dataset = batches(
        features, y, batch_size or 32, sample_weight=sample_weight
    )
    return _map_inputs(dataset, to_inputs, features)


def text_dataset(dataset, preprocessor, to_inputs, argument="x"):
    """`dataset` with its text batches turned into the model's inputs.

    Elements may be text batches alone (`texts` or `(texts_a, texts_b)`)
    or `(texts, labels[, sample_weight])`; each batch of texts is
    tokenized in the pipeline and cut to its longest row.
    """
    layout = dataset_text_layout(dataset.element_spec)
    spec = dataset.element_spec
    spec = spec if layout == "alone" else spec[0]
    ranks = [s.shape.rank for s in tf.nest.flatten(spec)]
    if any(rank == 0 for rank in ranks):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: a "
            "`tf.data.Dataset` of single strings. Keras reads batches: "
            "call `dataset.batch(batch_size)` first."
        )

    pack = _packing(preprocessor, len(tf.nest.flatten(spec)))

    def inputs(texts):
        features = trim_batch(pack(texts))
        return features if to_inputs is None else to_inputs(features, None)

    if layout == "alone":
        return dataset.map(
            lambda *texts: inputs(texts if len(texts) == 2 else texts[0]),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    return dataset.map(
        lambda texts, *rest: (inputs(texts), *rest),
        num_parallel_calls=tf.data.AUTOTUNE,
    )


def validation_dataset(validation, preprocessor, to_inputs, batch_size):
    """`fit`'s `validation_data` with raw text turned into batches of ids
    (anything else returned as it is)."""
    if isinstance(validation, tf.data.Dataset):
        if not is_text(validation):
            return validation
        return text_dataset(
            validation,
            preprocessor,
            to_inputs,
            argument="validation_data",
        )
    if not (
        isinstance(validation, (tuple, list))
        and validation
        and is_text(validation[0])
    ):
        return validation
    if not 2 <= len(validation) <= 3:
        raise ValueError(
            "Received an invalid value for argument `validation_data`: "
            "expected `(texts, labels)` or `(texts, labels, "
            f"sample_weight)`; received {len(validation)} parts."
        )
    return inference_dataset(
        preprocessor,
        to_inputs,
        validation[0],
        validation[1],
        sample_weight=validation[2] if len(validation) == 3 else None,
        batch_size=batch_size,
    )


def _pack_all(preprocessor, texts):
    """`(features, batches)`: `texts` tokenized once, and the function
    that batches them (`packed_batches`, or `window_batches` for
    documents read in windows)."""
    if isinstance(preprocessor, DocumentWindows):
        preprocessor.batch_function(len(texts))  # refuses pairs
        check_documents(texts[0])
        windows = pack_windows(texts[0], preprocessor.flat_function())
        return windows, window_batches
    return pack_texts(texts, _packing(preprocessor, len(texts))), packed_batches


def _packing(preprocessor, num_texts):
    """The preprocessor's once-traced batch function, taking a text batch
    or a pair: each pipeline reuses its graph (see
    `BertPreprocessor.batch_function`)."""
    function = preprocessor.batch_function(num_texts)

    def pack(texts):
        return function(*texts) if isinstance(texts, tuple) else function(texts)

    return pack


def _map_inputs(dataset, to_inputs, all_features):
    """Applies `to_inputs` to each batch's features (the first part)."""
    if to_inputs is None:
        return dataset
    if isinstance(dataset.element_spec, tuple):
        return dataset.map(
            lambda features, *rest: (
                to_inputs(features, all_features),
                *rest,
            )
        )
    return dataset.map(lambda features: to_inputs(features, all_features))
