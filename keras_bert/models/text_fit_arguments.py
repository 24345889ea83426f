"""`keras.Model.fit`'s arguments for raw text.

`RawTextMethods.fit` (`keras_bert.models.raw_text`) checks raw text and
its labels; `text_fit_arguments` then turns `fit`'s arguments into those
`keras.Model.fit` takes: texts in lists or arrays become one epoch-shuffled
dataset of like-length batches (with `steps_per_epoch` set, and
`validation_split` taken from the last examples), a `tf.data.Dataset` of
text batches is tokenized in the pipeline, and `validation_data` becomes a
dataset read in order.
"""

import tensorflow as tf

from keras_bert.models.text_datasets import fit_dataset
from keras_bert.models.text_datasets import text_dataset
from keras_bert.models.text_datasets import validation_dataset
from keras_bert.models.text_inputs import split_last


def text_fit_arguments(
    arguments, x, y, validation, seed, packer, to_inputs, needs_labels=True
):
    """`keras.Model.fit`'s arguments for raw text `x`.

    Args:
        arguments: dict. `fit`'s arguments, bound with their defaults,
            without `validation_data`; changed in place.
        x: raw text: texts, a pair `(texts_a, texts_b)`, or a
            `tf.data.Dataset` of text batches.
        y: the checked labels.
        validation: the checked `validation_data`, or `None`.
        seed: int or `None`. The data order of texts in lists or arrays.
        packer: what turns a batch of raw text into the model's features
            (the preprocessor, or the document windows over it).
        to_inputs: the model's `_inputs_from_text`, or `None`.
        needs_labels: bool. Whether texts in lists or arrays need `y`.

    Returns:
        `arguments`, with `x` and `validation_data` datasets and `y`,
        `batch_size` and `sample_weight` left to them.
    """
    validation_batch_size = (
        arguments.pop("validation_batch_size") or arguments["batch_size"]
    )
    split = arguments.pop("validation_split")
    if isinstance(x, tf.data.Dataset):
        if seed is not None:
            raise ValueError(
                "Received an invalid value for argument `seed`: a "
                "`tf.data.Dataset` keeps its own order. Received: "
                f"seed={seed!r}; shuffle the dataset instead."
            )
        if split:
            raise ValueError(
                "`validation_split` needs texts in lists or arrays; "
                "with a `tf.data.Dataset`, pass `validation_data`."
            )
        arguments["x"] = text_dataset(x, packer, to_inputs)
    else:
        if arguments["steps_per_epoch"] is not None:
            raise ValueError(
                "Received an invalid value for argument "
                "`steps_per_epoch`: `fit` on texts in lists or arrays "
                "trains whole epochs. Pass steps_per_epoch=None, or a "
                "`tf.data.Dataset` of text batches."
            )
        x_train, y_train, weights = x, y, arguments["sample_weight"]
        if split:
            (x_train, y_train, weights), validation = split_last(
                (x, y, weights), split
            )
        arguments["x"], arguments["steps_per_epoch"] = fit_dataset(
            packer,
            to_inputs,
            x_train,
            y_train,
            sample_weight=weights,
            batch_size=arguments["batch_size"],
            shuffle=arguments["shuffle"],
            seed=seed,
            initial_epoch=arguments["initial_epoch"],
            epochs=arguments["epochs"],
            needs_labels=needs_labels,
        )
        arguments["shuffle"] = False  # each epoch is shuffled already
    arguments.update(y=None, batch_size=None, sample_weight=None)
    arguments["validation_data"] = validation_dataset(
        validation,
        packer,
        to_inputs,
        validation_batch_size,
    )
    return arguments
