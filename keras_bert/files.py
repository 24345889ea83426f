"""Files anywhere `tf.io.gfile` reaches: local, `gs://`, `s3://`, `ram://`.

Every file keras_bert or a recipe reads or writes goes through these
helpers or through `tf.io.gfile` itself (`tests/test_file_access.py` holds
the package to it), so that a user's data, checkpoints and exports can live
in object storage. A few libraries only take local paths (`safetensors`'
memory-mapped reader, `torch.load` of a path): `local_copy` stages such a
file through a local temporary copy. (TensorFlow and Keras themselves read
and write `scheme://` paths: checkpoints, `.keras` and `.weights.h5`
files, SavedModels, TFRecords, TensorBoard logs.)

Example:
```python
keras_bert.files.write_json("ram://run/results.json", {"f1": 0.9})
keras_bert.files.read_json("ram://run/results.json")  # {"f1": 0.9}
```
"""

import contextlib
import json
import os
import posixpath
import shutil
import tempfile

import tensorflow as tf


def is_local(path):
    """Whether `path` is on the local filesystem (no `scheme://`)."""
    path = os.fspath(path)
    return "://" not in path or path.startswith("file://")


def join(path, *parts):
    """`os.path.join` for local paths, `/`-joined for `scheme://` ones."""
    path = os.fspath(path)
    if is_local(path):
        return os.path.join(path, *parts)
    return posixpath.join(path, *parts)


def exists(path):
    return tf.io.gfile.exists(os.fspath(path))


def isdir(path):
    return tf.io.gfile.isdir(os.fspath(path))


def makedirs(path):
    tf.io.gfile.makedirs(os.fspath(path))


def read_bytes(path):
    with tf.io.gfile.GFile(os.fspath(path), "rb") as file:
        return file.read()


def read_text(path):
    """The file decoded as UTF-8 (invalid bytes are an error)."""
    return read_bytes(path).decode("utf-8")


def read_json(path):
    return json.loads(read_text(path))


def write_bytes(path, data):
    """Writes `data` to `path`, creating missing parent directories."""
    path = os.fspath(path)
    parent = posixpath.dirname(path) if not is_local(path) else None
    parent = os.path.dirname(path) if parent is None else parent
    if parent and not tf.io.gfile.exists(parent):
        tf.io.gfile.makedirs(parent)
    if tf.io.gfile.exists(path):
        # TensorFlow's ram:// filesystem appends to an existing file opened
        # with "w"; every other one truncates. Removing it first is right
        # for both.
        tf.io.gfile.remove(path)
    with tf.io.gfile.GFile(path, "wb") as file:
        file.write(data)


def write_text(path, text):
    write_bytes(path, text.encode("utf-8"))


def write_json(path, value, indent=2, **kwargs):
    write_text(path, json.dumps(value, indent=indent, **kwargs) + "\n")


def copy_tree(source, destination, last=()):
    """Copies the directory `source` into `destination` (made if missing),
    file by file, overwriting files of the same name.

    Args:
        source, destination: str. Directories.
        last: file names (at any depth) copied after all the others, e.g.
            `("saved_model.pb",)`, the file whose presence says a
            SavedModel is complete.
    """
    source, destination = os.fspath(source), os.fspath(destination)
    copies = []
    for directory, _, names in tf.io.gfile.walk(source):
        relative = directory[len(source) :].strip("/")
        target = join(destination, relative) if relative else destination
        tf.io.gfile.makedirs(target)
        copies += [
            (join(directory, name), join(target, name)) for name in names
        ]
    copies.sort(key=lambda pair: posixpath.basename(pair[0]) in last)
    for source_file, target_file in copies:
        tf.io.gfile.copy(source_file, target_file, overwrite=True)


@contextlib.contextmanager
def local_copy(path):
    """Yields a local path holding the file `path`: `path` itself when it
    is local, else a temporary copy (removed afterwards)."""
    path = os.fspath(path)
    if is_local(path):
        yield path
        return
    directory = tempfile.mkdtemp(prefix="keras_bert-")
    try:
        local = os.path.join(directory, posixpath.basename(path) or "file")
        tf.io.gfile.copy(path, local, overwrite=True)
        yield local
    finally:
        shutil.rmtree(directory, ignore_errors=True)  # gfile-exempt: temp
