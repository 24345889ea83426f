"""Raw text for a multiple-choice model: checked, packed, batched.

`keras_bert.BertMultipleChoice` reads examples of a context and its
candidate choices: `(contexts, choices)`, a list of `num_examples`
strings and a list of as many lists of `num_choices` strings each. Each
choice is packed with its context as a sentence pair (`[CLS] context
[SEP] choice [SEP]`, the context in segment 0), so the model's inputs
are `(num_examples, num_choices, sequence_length)`. The checks here run
before anything is tokenized or traced and name the bad value.
"""

import numpy as np
import tensorflow as tf

from keras_bert.data.packed_batches import pack_texts

_LAYOUT = (
    "Pass `(contexts, choices)`: a list of strings (one context per "
    "example) and a list of as many lists of strings, every one with the "
    "same number of choices, e.g. (['The cat'], [['sat.', 'flew.']])."
)


def is_choice_text(x):
    """Whether `x` looks like raw text (as opposed to the ids dict)."""
    if isinstance(x, tuple):
        return any(_has_strings(part) for part in x)
    return _has_strings(x)


def check_choices(x, argument="x"):
    """`(contexts, choices)` as numpy object arrays, checked.

    Args:
        x: `(contexts, choices)` (see the module's docstring); lists,
            numpy arrays or string tensors.
        argument: str. The argument `x` came in, for the errors.

    Returns:
        `(contexts, choices)`: object arrays of str `(num_examples,)` and
        `(num_examples, num_choices)`.

    Raises:
        ValueError: naming the bad part: not a pair, a context that is
            not a string, ragged or empty choice lists, or as many
            contexts as choice lists.
    """
    if not (isinstance(x, (tuple, list)) and len(x) == 2):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{_describe(x)}. {_LAYOUT}"
        )
    contexts, choices = (_numpy(part) for part in x)
    contexts = _string_array(contexts, argument, "contexts")
    if contexts.ndim != 1:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: contexts "
            f"of shape {contexts.shape}, expected one string per example. "
            + _LAYOUT
        )
    rows = list(choices) if isinstance(choices, (list, np.ndarray)) else None
    if rows is None or (
        isinstance(choices, np.ndarray) and choices.ndim not in (1, 2)
    ):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: choices "
            f"{_describe(choices)}. {_LAYOUT}"
        )
    if len(rows) != len(contexts):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{len(contexts)} contexts and {len(rows)} choice lists. Pass "
            "one list of choices per context."
        )
    if not rows:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: no "
            "examples. Pass at least one context with its choices."
        )
    sizes = []
    for index, row in enumerate(rows):
        row = _numpy(row)
        if isinstance(row, (str, bytes)) or not isinstance(
            row, (list, tuple, np.ndarray)
        ):
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"choices[{index}] is {_describe(row)}, expected a list of "
                f"strings. {_LAYOUT}"
            )
        sizes.append(len(row))
    if sizes[0] == 0 or any(size == 0 for size in sizes):
        index = sizes.index(0)
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"choices[{index}] is an empty list. Every example needs at "
            "least one choice (the model picks one of them)."
        )
    if len(set(sizes)) > 1:
        index = next(i for i, size in enumerate(sizes) if size != sizes[0])
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: ragged "
            f"choices: choices[0] has {sizes[0]} choices and "
            f"choices[{index}] has {sizes[index]}. Every example needs the "
            "same number of choices; split the examples into groups by "
            "their number of choices and call once per group."
        )
    table = np.empty((len(rows), sizes[0]), dtype=object)
    for index, row in enumerate(rows):
        table[index] = list(_numpy(row))
    table = _string_array(table, argument, "choices")
    return contexts, table


def check_choice_labels(labels, num_examples, num_choices, argument="y"):
    """Labels: the index of the right choice per example, checked.

    Args:
        labels: ints (or whole floats) `(num_examples,)` or
            `(num_examples, 1)`, or `None`.
        num_examples: int. Examples in `x`.
        num_choices: int. Choices per example.
        argument: str. The argument the labels came in, for the errors.

    Returns:
        int32 array `(num_examples,)`, or `None`.
    """
    if labels is None:
        return None
    values = np.asarray(_numpy(labels))
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or len(values) != num_examples:
        received = values.shape if values.ndim != 1 else len(values)
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{received} labels for {num_examples} examples. Pass one label "
            "per example: the index of its right choice."
        )
    if values.dtype.kind not in "iuf" or (
        values.dtype.kind == "f"
        and not np.all(np.isfinite(values) & (values == np.round(values)))
    ):
        bad = [v for v in values.tolist() if not _is_index(v)][:3]
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: labels "
            f"{bad}, expected choice indices (ints). Pass the index of the "
            "right choice of each example, 0 for the first."
        )
    values = values.astype(np.int64)
    bad = np.flatnonzero((values < 0) | (values >= num_choices))
    if len(bad):
        quoted = ", ".join(f"y[{i}]={values[i]}" for i in bad[:3])
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: {quoted} "
            f"out of range for {num_choices} choices. Labels are the index "
            f"of the right choice, 0 to {num_choices - 1}."
        )
    return values.astype(np.int32)


def pack_choices(preprocessor, contexts, choices):
    """Every `(context, choice)` pair packed once, grouped by example.

    Args:
        preprocessor: `keras_bert.BertPreprocessor`.
        contexts: str array `(num_examples,)`.
        choices: str array `(num_examples, num_choices)`.

    Returns:
        A dict of int32 arrays `(num_examples, num_choices,
        sequence_length)`: `token_ids`, `segment_ids`, `padding_mask`.
    """
    num_examples, num_choices = choices.shape
    pack = preprocessor.batch_function(2)
    features = pack_texts(
        (np.repeat(contexts, num_choices), choices.reshape(-1)),
        lambda texts: pack(*texts),
    )
    return {
        name: value.reshape(num_examples, num_choices, -1)
        for name, value in features.items()
    }


def trim_choices(features):
    """`(batch, choices, sequence)` features cut to the longest row.

    The model's outputs do not change: padding is masked. Tensors or
    numpy arrays; an empty batch keeps one column.
    """
    mask = tf.cast(features["padding_mask"], tf.int32)
    longest = tf.maximum(tf.reduce_max(tf.reduce_sum(mask, axis=-1)), 1)
    return {name: value[:, :, :longest] for name, value in features.items()}


def choice_dataset(
    features,
    labels=None,
    sample_weight=None,
    batch_size=32,
    shuffle=False,
    seed=None,
):
    """Batches of packed choices, each cut to its longest row.

    Args:
        features: `pack_choices`'s dict.
        labels: int array `(num_examples,)` or `None`.
        sample_weight: array `(num_examples,)` or `None`.
        batch_size: int. Examples per batch.
        shuffle: bool. Reshuffle every epoch (every pass over the dataset)
            from `seed`.
        seed: int or `None`.

    Returns:
        A `tf.data.Dataset` of `features` batches, or of `(features,
        labels[, sample_weight])`.
    """
    parts = [features]
    if labels is not None:
        parts.append(labels)
        if sample_weight is not None:
            parts.append(np.asarray(sample_weight, "float32"))
    dataset = tf.data.Dataset.from_tensor_slices(
        tuple(parts) if len(parts) > 1 else features
    )
    if shuffle:
        dataset = dataset.shuffle(
            len(features["token_ids"]),
            seed=seed,
            reshuffle_each_iteration=True,
        )
    dataset = dataset.batch(batch_size)
    if len(parts) == 1:
        dataset = dataset.map(trim_choices)
    else:
        dataset = dataset.map(
            lambda inputs, *rest: (trim_choices(inputs), *rest)
        )
    return dataset.prefetch(tf.data.AUTOTUNE)


def _has_strings(x):
    x = _numpy(x)
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "US":
            return True
        return x.dtype == object and x.size and _has_strings(x.flat[0])
    if isinstance(x, (list, tuple)) and x:
        return _has_strings(x[0])
    return False


def _numpy(x):
    if isinstance(x, tf.Tensor):
        return x.numpy()
    return x


def _string_array(values, argument, part):
    array = np.asarray(values, dtype=object)
    for index in np.ndindex(array.shape):
        value = array[index]
        if isinstance(value, bytes):
            array[index] = value.decode("utf-8")
        elif not isinstance(value, str):
            where = "".join(f"[{i}]" for i in index)
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"{part}{where} is {_describe(value)}, where a string "
                f"belongs. {_LAYOUT}"
            )
    return array


def _describe(value):
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return f"a {type(value).__name__} ({value!r:.60})"


def _is_index(value):
    return isinstance(value, (int, float)) and float(value).is_integer()
