"""keras_bert.files: reading and writing anywhere tf.io.gfile reaches."""

import os

import pytest
import tensorflow as tf

from keras_bert import files


@pytest.mark.parametrize("root", ["local", "ram://test_files"])
def test_write_read_and_overwrite(tmp_path, root):
    root = str(tmp_path) if root == "local" else root
    path = files.join(root, "a", "b", "results.json")
    files.write_json(path, {"f1": 0.5, "name": "é"})
    assert files.read_json(path) == {"f1": 0.5, "name": "é"}
    # A shorter file over a longer one: nothing of the old is left (ram://
    # appends when a file is opened with "w"; the old file goes first).
    files.write_text(path, "{}")
    assert files.read_text(path) == "{}"
    files.write_bytes(files.join(root, "raw.bin"), b"\x00\xff")
    assert files.read_bytes(files.join(root, "raw.bin")) == b"\x00\xff"
    assert files.isdir(files.join(root, "a")) and files.exists(path)


def test_local_copy_of_a_remote_file_is_removed_after():
    files.write_bytes("ram://test_files/weights.bin", b"weights")
    with files.local_copy("ram://test_files/weights.bin") as local:
        assert files.is_local(local) and os.path.exists(local)
        with open(local, "rb") as file:
            assert file.read() == b"weights"
    assert not os.path.exists(local)


def test_local_copy_of_a_local_file_is_the_file(tmp_path):
    path = str(tmp_path / "w.bin")
    files.write_bytes(path, b"x")
    with files.local_copy(path) as local:
        assert local == path
    assert os.path.exists(path)


def test_copy_tree_copies_the_last_files_last(tmp_path, monkeypatch):
    source = "ram://test_files/tree"
    for name in ("saved_model.pb", "variables/variables.index", "x.txt"):
        files.write_text(files.join(source, name), name)
    copied = []
    copy = tf.io.gfile.copy

    def recording_copy(a, b, overwrite=False):
        copied.append(os.path.basename(a))
        copy(a, b, overwrite=overwrite)

    monkeypatch.setattr(tf.io.gfile, "copy", recording_copy)
    files.copy_tree(source, str(tmp_path / "out"), last=("saved_model.pb",))
    assert copied[-1] == "saved_model.pb" and len(copied) == 3
    assert (tmp_path / "out" / "variables" / "variables.index").read_text() == (
        "variables/variables.index"
    )


def test_is_local():
    assert files.is_local("/tmp/x") and files.is_local("runs/x")
    assert files.is_local("file:///tmp/x")
    assert not files.is_local("gs://bucket/x")
    assert not files.is_local("ram://x")
