"""Big eager batches of text, run in chunks of bounded memory.

`BertTokenizer` and `BertPreprocessor` called eagerly on a big batch (or a
Python list of many strings) would hold the ops' scratch memory for every
string at once, and Keras' `__call__` would first copy a list into one
array of fixed-width strings. Here a batch runs a chunk of at most
`EAGER_CHUNK` strings at a time, each chunk's result copied into the
joined output as soon as it is made: the output's rows grow in an
anonymous memory map that TensorFlow then takes as the tensor's buffer,
without a copy.
"""

import math
import mmap

import numpy as np
import tensorflow as tf

# Strings per call when a big batch is processed eagerly: the ops' scratch
# memory grows with the number of strings in a call, far beyond their
# output, so the batch runs in chunks and the scratch stays that of one
# chunk (section `tokenizer_memory` of benchmarks/RESULTS.md has the peak
# memory this leaves, against the output's size).
EAGER_CHUNK = 4096


def is_long_string_list(inputs):
    """Whether `inputs` is a Python list of more than `EAGER_CHUNK`
    strings, called eagerly (converted to one string tensor, the input
    alone would hold another copy of all the text)."""
    return (
        isinstance(inputs, (list, tuple))
        and len(inputs) > EAGER_CHUNK
        and isinstance(inputs[0], (str, bytes))
        and tf.executing_eagerly()
    )


def concat_chunks(function, *batches):
    """`function` on chunks of at most `EAGER_CHUNK` rows of `batches`
    (lists or 1-D tensors), the results joined along the first axis (dense
    or ragged tensors, any structure).

    Each chunk's result is copied into the joined output as soon as it is
    made, then dropped: memory holds the output and one chunk, not every
    chunk's result beside their concatenation.
    """
    total = len(batches[0])
    structure, outputs = None, None
    for start in range(0, total, EAGER_CHUNK):
        chunk = [items[start : start + EAGER_CHUNK] for items in batches]
        part = function(*chunk)
        if outputs is None:
            structure = tf.nest.map_structure(lambda _: None, part)
            outputs = [
                _JoinedRows(leaf, total) for leaf in tf.nest.flatten(part)
            ]
        for output, leaf in zip(outputs, tf.nest.flatten(part)):
            output.append(leaf)
        del chunk, part, leaf  # before the next chunk is made
    return tf.nest.pack_sequence_as(
        structure, [output.to_tensor() for output in outputs]
    )


class _JoinedRows:
    """One dense or ragged output of `concat_chunks`, filled a chunk at a
    time: a dense tensor's rows, or a ragged tensor's row splits and
    values, each in one `_GrowingArray`."""

    def __init__(self, first, total):
        self.ragged = isinstance(first, tf.RaggedTensor)
        if self.ragged and first.ragged_rank != 1:
            raise ValueError(
                "concat_chunks joins dense tensors and ragged tensors of "
                f"ragged rank 1; received ragged rank {first.ragged_rank}."
            )
        if not self.ragged:
            self.rows = _GrowingArray(first.dtype, first.shape[1:], total)
            return
        self.row_splits = _GrowingArray(first.row_splits.dtype, (), total + 1)
        self.row_splits.append(np.zeros(1, self.row_splits.dtype))
        # The first chunk's values per row, scaled: a guess, which the
        # values' array outgrows in place if need be.
        values = first.values
        guess = values.shape[0] * total // max(len(first.row_splits) - 1, 1)
        self.values = _GrowingArray(values.dtype, values.shape[1:], guess)

    def append(self, part):
        if not self.ragged:
            self.rows.append(part.numpy())
            return
        offset = self.values.size
        self.row_splits.append(part.row_splits.numpy()[1:] + offset)
        self.values.append(part.values.numpy())

    def to_tensor(self):
        if not self.ragged:
            return self.rows.to_tensor()
        return tf.RaggedTensor.from_row_splits(
            self.values.to_tensor(), self.row_splits.to_tensor(), validate=False
        )


class _GrowingArray:
    """Rows appended to a NumPy array that TensorFlow then takes as its
    buffer.

    The memory is an anonymous memory map: committed only where rows are
    written, so over-reserving costs nothing; grown in place (`mremap`),
    so outgrowing it does not copy; and handed to TensorFlow through
    DLPack, which keeps it as the tensor's buffer (tests/text/
    test_bad_input.py checks that it is not copied). Where a map cannot be
    resized (no `mremap`: macOS, the BSDs), it grows into a new map, the
    rows copied once, and is not shrunk at the end.
    """

    def __init__(self, dtype, inner_shape, capacity):
        self.dtype = np.dtype(tf.as_dtype(dtype).as_numpy_dtype)
        self.inner_shape = tuple(inner_shape)
        self.row_bytes = self.dtype.itemsize * math.prod(self.inner_shape)
        self.size = 0  # rows written
        self._map = _anonymous_map(capacity * self.row_bytes)

    def append(self, rows):
        end = self.size + len(rows)
        if end * self.row_bytes > len(self._map):
            size = max(end * self.row_bytes, 2 * len(self._map))
            if not _resize_map(self._map, size):
                used = self.size * self.row_bytes
                grown = _anonymous_map(size)
                grown[:used] = self._map[:used]
                self._map = grown
        self._view(self.size, end)[...] = rows
        self.size = end

    def _view(self, start, end):
        count = (end - start) * math.prod(self.inner_shape)
        array = np.frombuffer(
            self._map, self.dtype, count, offset=start * self.row_bytes
        )
        return array.reshape((end - start,) + self.inner_shape)

    def to_tensor(self):
        """The rows as a CPU tensor that holds this memory (no copy)."""
        if self.size == 0:
            return tf.zeros((0,) + self.inner_shape, self.dtype)
        _resize_map(self._map, self.size * self.row_bytes)  # free the rest
        # DLPack hands TensorFlow the memory itself; tf.convert_to_tensor
        # would copy it.
        rows = self._view(0, self.size)
        return tf.experimental.dlpack.from_dlpack(rows.__dlpack__())


def _anonymous_map(size):
    # MAP_PRIVATE where there is one (not on Windows, whose default is
    # an anonymous map too).
    flags = {"flags": mmap.MAP_PRIVATE} if hasattr(mmap, "MAP_PRIVATE") else {}
    return mmap.mmap(-1, max(size, 1), **flags)


def _resize_map(memory_map, size):
    """Resizes in place; `False` where the system cannot (no `mremap`)."""
    try:
        memory_map.resize(max(size, 1))
    except (SystemError, OSError):
        return False
    return True


def eager_in_chunks(function, *batches):
    """`function(*batches)` for 1-D batches, called on chunks of at most
    `EAGER_CHUNK` rows and concatenated (dense or ragged, any structure).

    The same result as one call, in memory bounded by the output plus one
    chunk's scratch. For scalars and small batches it is one call.
    """
    first = batches[0]
    if first.shape.rank != 1 or first.shape[0] <= EAGER_CHUNK:
        return function(*batches)
    return concat_chunks(function, *batches)
