"""The TFDS source gives the same examples as the TSV files it is built from.

TFDS cannot download here, so its real GLUE builder is run on the fixture
files: the download step is patched to return the fixture directory.
"""

import os
from unittest import mock

import pytest

from keras_bert.fine_tuning.glue import tfds as glue_tfds
from keras_bert.fine_tuning.glue.tfds import GlueDataNotFoundError
from keras_bert.fine_tuning.glue.tfds import load_glue_tfds
from keras_bert.fine_tuning.glue.tsv import read_glue_tsv
from tests.fine_tuning.glue.fixtures import glue_fixture_dir

tfds = pytest.importorskip("tensorflow_datasets")

# tests/fine_tuning/glue/fixtures.py, written once
FIXTURES = glue_fixture_dir()


def _prepare(task, data_dir):
    builder = tfds.builder(f"glue/{task}", data_dir=data_dir)
    manager = tfds.download.DownloadManager
    diagnostic = os.path.join(FIXTURES, "diagnostic", "diagnostic.tsv")
    with (
        mock.patch.object(
            manager, "download_and_extract", return_value=FIXTURES
        ),
        mock.patch.object(manager, "download", return_value=diagnostic),
    ):
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(try_download_gcs=False)
        )
    return builder


@pytest.mark.parametrize(
    "task", ["cola", "sst2", "qqp", "stsb", "mnli", "qnli", "rte", "wnli", "ax"]
)
def test_tfds_and_tsv_give_the_same_examples(task, tmp_path):
    builder = _prepare(task, str(tmp_path))
    for split in builder.info.splits:
        from_tfds = load_glue_tfds(task, split, str(tmp_path), download=False)
        from_tsv = read_glue_tsv(task, split, FIXTURES)
        assert from_tfds.keys() == from_tsv.keys()
        for name in from_tsv:
            assert from_tfds[name].dtype == from_tsv[name].dtype, name
            assert from_tfds[name].tolist() == from_tsv[name].tolist(), name


def test_offline_fails_fast_naming_the_tfds_directory(tmp_path):
    with mock.patch.object(
        glue_tfds, "glue_download_unavailable", return_value="no network"
    ):
        with pytest.raises(GlueDataNotFoundError, match="glue/rte.*no network"):
            load_glue_tfds("rte", "train", str(tmp_path))
