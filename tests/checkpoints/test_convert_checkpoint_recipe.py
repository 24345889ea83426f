"""recipes/convert_checkpoint.py: Google -> keras -> Hugging Face."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import keras_bert
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers
from tests.checkpoints.google_writer import google_config
from tests.checkpoints.google_writer import google_variables
from tests.checkpoints.google_writer import write_google_checkpoint
from tests.checkpoints.test_huggingface_checkpoints import tiny_config
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config

require_references()

REPOSITORY = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"word{i}" for i in range(45)
]


def _convert(input_dir, output_dir, to, *flags):
    """`(conversion.json, stderr)` of the recipe run on `input_dir`."""
    process = subprocess.run(
        [
            sys.executable,
            os.path.join(REPOSITORY, "recipes", "convert_checkpoint.py"),
            f"--input={input_dir}",
            f"--output={output_dir}",
            f"--to={to}",
            *flags,
        ],
        check=True,
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": REPOSITORY},
        capture_output=True,
        text=True,
    )
    with open(os.path.join(output_dir, "conversion.json")) as file:
        return json.load(file), process.stderr


@pytest.mark.slow
def test_google_to_keras_to_huggingface(tmp_path):
    config = tiny_config(hidden_act="gelu_new")
    torch.manual_seed(0)
    reference = transformers.BertForPreTraining(config).eval()
    state = {k: v.numpy() for k, v in reference.state_dict().items()}
    google_dir = str(tmp_path / "uncased_google")
    write_google_checkpoint(
        google_dir, google_variables(state, 2), google_config(config.to_dict())
    )
    with open(os.path.join(google_dir, "vocab.txt"), "w") as file:
        file.write("\n".join(VOCABULARY) + "\n")

    keras_dir, huggingface_dir = str(tmp_path / "k"), str(tmp_path / "hf")
    to_keras, _ = _convert(google_dir, keras_dir, "keras")
    assert to_keras["input_format"] == "google"
    assert to_keras["model_class"] == "BertMaskedLM"
    assert "model.keras" in to_keras["files"]
    to_huggingface, _ = _convert(keras_dir, huggingface_dir, "huggingface")
    assert to_huggingface["input_format"] == "keras"
    assert to_huggingface["parameters"] == to_keras["parameters"]

    exported, info = transformers.BertForPreTraining.from_pretrained(
        huggingface_dir, output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert exported.config.hidden_act == "gelu_new"
    assert (
        sum(p.numel() for p in exported.parameters())
        == (to_keras["parameters"])
    )
    inputs = backbone_inputs(batch_size=2, sequence_length=7)
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs))
        actual = exported.eval()(**torch_inputs(inputs))
    real = inputs["padding_mask"].astype(bool)
    assert (
        max_abs_diff(
            actual.prediction_logits.numpy()[real],
            expected.prediction_logits.numpy()[real],
        )
        <= 1e-5
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(huggingface_dir)
    assert tokenizer.convert_tokens_to_ids(["word3"]) == [8]
    assert np.array_equal(tokenizer("word1 word2")["input_ids"], [2, 6, 7, 3])


@pytest.mark.slow
def test_the_deprecated_model_name_converts_with_a_warning(tmp_path):
    """`--model=question_answerer` (keras_bert.deprecations) still builds
    the question answerer, and says what to write instead."""
    model = keras_bert.BertQuestionAnswerer(
        keras_bert.BertBackbone(**tiny_backbone_config())
    )
    input_dir, output_dir = str(tmp_path / "qa"), str(tmp_path / "k")
    keras_bert.checkpoints.save_huggingface(model, None, input_dir)
    conversion, stderr = _convert(
        input_dir, output_dir, "keras", "--model=question_answerer"
    )
    assert "FutureWarning" in stderr
    assert "--model=question_answering" in stderr
    assert conversion["model_class"] == "BertQuestionAnswerer"
