"""BertTextEmbedder: one float32 embedding per text, pooled as configured.

Checked: the output `(batch, hidden)` float32 equals the pooling of the
backbone's `sequence_output` worked out in NumPy for each of cls, mean
and max, with and without L2 normalisation; padding does not change a
text's embedding; raw text in `predict`; config and `.keras` saving;
bad pooling names are named in the error; `from_checkpoint` reads
pooling, normalisation and `max_seq_length` from sentence-transformers
files, arguments override them, and a checkpoint without them gets mean
pooling, no normalisation and a warning.
"""

import json
import logging
import os

import numpy as np
import pytest

import keras_bert
from keras_bert import BertBackbone
from keras_bert import BertTextEmbedder
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import run_serialization_test
from tests.helpers import tiny_backbone_config

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    "a", "good", "bad", "film", "book", "the", "is",
]  # fmt: skip


def embedder(pooling="mean", normalize=True, **kwargs):
    backbone = BertBackbone(**tiny_backbone_config())
    return BertTextEmbedder(backbone, pooling, normalize, **kwargs)


def numpy_pooling(sequence, mask, pooling, normalize):
    mask = mask.astype(bool)
    if pooling == "cls":
        pooled = sequence[:, 0]
    elif pooling == "mean":
        pooled = np.stack([s[m].mean(0) for s, m in zip(sequence, mask)])
    else:
        pooled = np.stack([s[m].max(0) for s, m in zip(sequence, mask)])
    if normalize:
        pooled = pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
    return pooled


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_pools_the_sequence_output_as_numpy(pooling, normalize):
    model = embedder(pooling, normalize)
    inputs = backbone_inputs(batch_size=3, sequence_length=7)
    embeddings = np.asarray(model(inputs))
    sequence = np.asarray(model.backbone(inputs)["sequence_output"])
    expected = numpy_pooling(
        sequence, inputs["padding_mask"], pooling, normalize
    )
    assert embeddings.shape == (3, 8) and embeddings.dtype == np.float32
    np.testing.assert_allclose(embeddings, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_padding_does_not_change_an_embedding(pooling):
    model = embedder(pooling)
    inputs = backbone_inputs(batch_size=2, sequence_length=6)
    padded = {
        name: np.pad(value, ((0, 0), (0, 4))) for name, value in inputs.items()
    }
    np.testing.assert_allclose(
        model(inputs), model(padded), rtol=1e-5, atol=1e-6
    )


def test_float32_under_mixed_precision():
    backbone = BertBackbone(**tiny_backbone_config(dtype="mixed_bfloat16"))
    model = BertTextEmbedder(backbone)
    assert model(backbone_inputs()).dtype == "float32"


@pytest.mark.slow  # predict's tf.data pipeline: about 14 s on a busy CPU
def test_predict_on_raw_text_equals_ids():
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
    )
    model = embedder(preprocessor=preprocessor)
    texts = ["a good film", "", "the book is bad"]
    from_text = model.predict(texts, verbose=0)
    from_ids = np.asarray(model(preprocessor(texts)))
    assert from_text.shape == (3, 8)
    np.testing.assert_allclose(from_text, from_ids, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(from_text, axis=-1), 1, 1e-5)


def test_empty_string_is_cls_and_sep():
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
    )
    features = preprocessor(["", "a good film"])
    np.testing.assert_array_equal(features["token_ids"][0, :3], [2, 3, 0])
    embedding = np.asarray(embedder()(features))
    assert np.all(np.isfinite(embedding))
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=-1), 1, 1e-5)


def test_config_is_complete_and_round_trips():
    model = embedder("max", False)
    assert_config_complete(model, exempt=("preprocessor",))
    rebuilt = run_serialization_test(model)
    assert (rebuilt.pooling, rebuilt.normalize) == ("max", False)


def test_keras_file_round_trip():
    run_model_saving_test(embedder("cls"), backbone_inputs())


@pytest.mark.parametrize("pooling", ["first", "MEAN", None, "mean_sqrt_len"])
def test_bad_pooling_names_the_value_and_the_choices(pooling):
    with pytest.raises(ValueError, match="'cls', 'mean', 'max'") as error:
        embedder(pooling)
    assert f"pooling={pooling!r}" in str(error.value)


def test_bad_normalize_is_named():
    with pytest.raises(ValueError, match="normalize='yes'"):
        embedder(normalize="yes")


# --- sentence-transformers files ---------------------------------------------


def save_checkpoint(path, modules=None, pooling=None, max_seq_length=None):
    """A tiny Hugging Face checkpoint, with sentence-transformers files."""
    backbone = BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
    )
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    keras_bert.checkpoints.save_huggingface(backbone, tokenizer, str(path))
    if modules is not None:
        with open(os.path.join(path, "modules.json"), "w") as file:
            json.dump(modules, file)
    if pooling is not None:
        os.makedirs(os.path.join(path, "1_Pooling"))
        with open(os.path.join(path, "1_Pooling", "config.json"), "w") as f:
            json.dump(pooling, f)
    if max_seq_length is not None:
        config = {"max_seq_length": max_seq_length, "do_lower_case": False}
        with open(os.path.join(path, "sentence_bert_config.json"), "w") as f:
            json.dump(config, f)
    return backbone


def st_module(index, path, kind):
    """One `modules.json` entry, as sentence-transformers writes it."""
    return {
        "idx": index,
        "name": str(index),
        "path": path,
        "type": f"sentence_transformers.models.{kind}",
    }


def st_modules(normalize=True):
    modules = [
        st_module(0, "", "Transformer"),
        st_module(1, "1_Pooling", "Pooling"),
    ]
    if normalize:
        modules.append(st_module(2, "2_Normalize", "Normalize"))
    return modules


def pooling_config(mode):
    return {
        "word_embedding_dimension": 8,
        "pooling_mode_cls_token": mode == "cls",
        "pooling_mode_mean_tokens": mode == "mean",
        "pooling_mode_max_tokens": mode == "max",
        "pooling_mode_mean_sqrt_len_tokens": False,
    }


@pytest.mark.parametrize(
    "pooling, normalize", [("cls", True), ("max", False), ("mean", True)]
)
def test_from_checkpoint_reads_sentence_transformers_files(
    tmp_path, pooling, normalize
):
    backbone = save_checkpoint(
        tmp_path, st_modules(normalize), pooling_config(pooling), 10
    )
    model = BertTextEmbedder.from_checkpoint(str(tmp_path))
    assert (model.pooling, model.normalize) == (pooling, normalize)
    assert model.preprocessor.sequence_length == 10
    inputs = backbone_inputs(vocabulary_size=len(VOCABULARY))
    expected = numpy_pooling(
        np.asarray(backbone(inputs)["sequence_output"]),
        inputs["padding_mask"],
        pooling,
        normalize,
    )
    np.testing.assert_allclose(model(inputs), expected, rtol=1e-5, atol=1e-6)


def test_arguments_override_the_files(tmp_path):
    save_checkpoint(tmp_path, st_modules(True), pooling_config("mean"), 10)
    model = BertTextEmbedder.from_checkpoint(
        str(tmp_path), pooling="cls", normalize=False, sequence_length=6
    )
    assert (model.pooling, model.normalize) == ("cls", False)
    assert model.preprocessor.sequence_length == 6


def test_max_seq_length_is_capped_by_the_positions(tmp_path):
    save_checkpoint(tmp_path, st_modules(), pooling_config("mean"), 4096)
    model = BertTextEmbedder.from_checkpoint(str(tmp_path))
    assert model.preprocessor.sequence_length == 16  # the backbone's


def test_without_sentence_transformers_files_mean_and_a_warning(
    tmp_path, caplog
):
    save_checkpoint(tmp_path)
    with caplog.at_level(logging.WARNING):
        model = BertTextEmbedder.from_checkpoint(str(tmp_path))
    assert (model.pooling, model.normalize) == ("mean", False)
    assert "no sentence-transformers modules.json" in caplog.text
    assert "pooling='mean', normalize=False" in caplog.text
    assert model.preprocessor.sequence_length == 16  # 512, capped


def test_without_files_no_warning_when_both_are_given(tmp_path, caplog):
    save_checkpoint(tmp_path)
    with caplog.at_level(logging.WARNING):
        model = BertTextEmbedder.from_checkpoint(
            str(tmp_path), pooling="max", normalize=True
        )
    assert (model.pooling, model.normalize) == ("max", True)
    assert "modules.json" not in caplog.text


def test_unsupported_pooling_mode_in_the_files_is_named(tmp_path):
    config = {
        **pooling_config("none"),
        "pooling_mode_weightedmean_tokens": True,
    }
    save_checkpoint(tmp_path, st_modules(), config)
    with pytest.raises(ValueError, match="pooling_mode_weightedmean_tokens"):
        BertTextEmbedder.from_checkpoint(str(tmp_path))
    # A pooling given by the caller replaces it.
    model = BertTextEmbedder.from_checkpoint(str(tmp_path), pooling="mean")
    assert model.pooling == "mean"


def test_a_dense_module_after_pooling_is_refused(tmp_path):
    modules = st_modules(False) + [
        {
            "idx": 2,
            "name": "2",
            "path": "2_Dense",
            "type": "sentence_transformers.models.Dense",
        }  # fmt: skip
    ]
    save_checkpoint(tmp_path, modules, pooling_config("mean"))
    with pytest.raises(
        ValueError, match="'sentence_transformers.models.Dense'"
    ):
        BertTextEmbedder.from_checkpoint(str(tmp_path))


def test_a_plain_bert_model_checkpoint_still_loads_as_a_backbone(tmp_path):
    save_checkpoint(tmp_path, st_modules(), pooling_config("mean"))
    model = keras_bert.checkpoints.load_checkpoint(str(tmp_path), "auto")
    assert isinstance(model, BertBackbone)
