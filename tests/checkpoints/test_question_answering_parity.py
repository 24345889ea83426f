"""BertQuestionAnswerer against transformers.BertForQuestionAnswering.

Real all-MiniLM-L6-v2 weights with a non-zero span head (drawn with a fixed
seed and saved), in both directions: a `transformers` checkpoint loaded by
us, and ours saved with `save_huggingface` and loaded by `transformers`;
also through a Google-layout checkpoint (`cls/squad/output_*`, as Google's
`run_squad.py` saves the head). Logits are compared, as the maximum over
elements, at every position where an answer can be (`[CLS]` and the context
tokens); elsewhere ours are `MASKED_LOGIT` by design.
"""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert.models.bert_question_answerer import MASKED_LOGIT
from keras_bert.models.bert_question_answerer import answer_positions
from tests.checkpoints.conftest import encode_with_huggingface
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers
from tests.checkpoints.google_writer import google_config
from tests.checkpoints.google_writer import google_variables
from tests.checkpoints.google_writer import write_google_checkpoint

require_references()

# float32 through six blocks and a drawn head, two implementations whose
# kernels (oneDNN's, which differ between CPUs) sum in different orders: a
# few times float32's rounding of these logits.
TOLERANCE = 2e-5

QUESTIONS_AND_CONTEXTS = [
    ("Who wrote it?", "The book was written by Émile Zola in 1867."),
    ("Where is Lyon?", "Lyon is a city in France, on the Rhône."),
    ("When?", "日本語 text, then a date: 12 May 2020."),
    ("What is BERT?", "BERT is a bidirectional transformer encoder. " * 4),
    ("How many?", "Three 🐈 cats sat on the mat."),
    ("Why?", "Because."),
]


@pytest.fixture(scope="module")
def qa_inputs(minilm_dir):
    return encode_with_huggingface(minilm_dir, [], QUESTIONS_AND_CONTEXTS)


@pytest.fixture(scope="module")
def torch_qa_dir(minilm_dir, tmp_path_factory):
    """MiniLM as a BertForQuestionAnswering with a drawn, saved head."""
    import torch

    model = transformers.BertForQuestionAnswering.from_pretrained(minilm_dir)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        model.qa_outputs.weight.copy_(
            torch.randn(model.qa_outputs.weight.shape, generator=generator)
            * 0.2
        )
        model.qa_outputs.bias.copy_(torch.tensor([0.3, -0.2]))
    directory = str(tmp_path_factory.mktemp("minilm_qa_torch"))
    model.save_pretrained(directory)
    return directory


def torch_logits(directory, inputs):
    import torch

    model = transformers.BertForQuestionAnswering.from_pretrained(
        directory
    ).eval()
    with torch.no_grad():
        outputs = model(**torch_inputs(inputs))
    return outputs.start_logits.numpy(), outputs.end_logits.numpy()


def assert_logits_match(model, inputs, expected_start, expected_end):
    outputs = model(inputs, training=False)
    allowed = answer_positions(
        inputs["segment_ids"], inputs["padding_mask"]
    ).numpy()
    # Most positions of these inputs can hold an answer.
    assert allowed.sum() > 0.5 * inputs["padding_mask"].sum()
    for name, expected in (
        ("start_logits", expected_start),
        ("end_logits", expected_end),
    ):
        ours = outputs[name].numpy()
        diff = max_abs_diff(ours[allowed], expected[allowed])
        print(f"{name} max-abs-diff at answer positions: {diff}")
        assert diff <= TOLERANCE
        assert np.all(ours[~allowed] == MASKED_LOGIT)
        assert np.abs(expected[allowed]).max() > 0.1  # a real, non-zero head


def test_loads_a_transformers_question_answering_checkpoint(
    torch_qa_dir, qa_inputs
):
    from keras_bert import BertQuestionAnswerer

    model = BertQuestionAnswerer.from_checkpoint(torch_qa_dir)
    assert_logits_match(
        model, qa_inputs, *torch_logits(torch_qa_dir, qa_inputs)
    )


def test_transformers_loads_what_we_save(
    minilm_dir, qa_inputs, tmp_path, torch_qa_dir
):
    import keras_bert

    model = keras_bert.BertQuestionAnswerer.from_checkpoint(minilm_dir)
    rng = np.random.default_rng(1)
    model.span_dense.kernel.assign(rng.normal(0, 0.2, (384, 2)))
    model.span_dense.bias.assign([-0.1, 0.25])
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    keras_bert.checkpoints.save_huggingface(model, tokenizer, str(tmp_path))
    with open(tmp_path / "config.json") as file:
        assert json.load(file)["architectures"] == ["BertForQuestionAnswering"]
    _, info = transformers.BertForQuestionAnswering.from_pretrained(
        str(tmp_path), output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert_logits_match(
        model, qa_inputs, *torch_logits(str(tmp_path), qa_inputs)
    )


@pytest.mark.slow
def test_google_run_squad_head(minilm_dir, torch_qa_dir, qa_inputs, tmp_path):
    from keras_bert import BertQuestionAnswerer

    with open(os.path.join(minilm_dir, "config.json")) as file:
        config = json.load(file)
    state = load_file(os.path.join(torch_qa_dir, "model.safetensors"))
    state["pooler.dense.weight"] = np.zeros((384, 384), "float32")
    state["pooler.dense.bias"] = np.zeros((384,), "float32")
    variables = google_variables(state, config["num_hidden_layers"], False)
    # run_squad.py stores the head (2, hidden), as Hugging Face does.
    variables["cls/squad/output_weights"] = state["qa_outputs.weight"]
    variables["cls/squad/output_bias"] = state["qa_outputs.bias"]
    # Exact GELU, so that the transformers reference applies unchanged.
    write_google_checkpoint(
        str(tmp_path), variables, google_config(config, hidden_act="gelu")
    )
    model = BertQuestionAnswerer.from_checkpoint(
        str(tmp_path), activation="gelu"
    )
    assert_logits_match(
        model, qa_inputs, *torch_logits(torch_qa_dir, qa_inputs)
    )
