"""recipes/export.py: a saved classifier + vocab → a servable version."""

import os
import re

import pytest
import tensorflow as tf

import keras_bert
from keras_bert.serving import rest_predict
from keras_bert.serving.cpu import this_cpu
from tests.helpers import run_export_recipe

VOCABULARY = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "good",
    "bad",
    "film",
]


@pytest.mark.slow
def test_export_recipe_writes_a_servable_version(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCABULARY) + "\n")
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    classifier.save(tmp_path / "clf.keras")
    export_dir = tmp_path / "served"
    result = run_export_recipe(
        f"--model={tmp_path / 'clf.keras'}",
        f"--vocab_file={vocab_file}",
        "--labels=negative,positive",
        "--sequence_length=12",
        f"--export_dir={export_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.listdir(export_dir) == ["1"]
    # It says what it serves and the setting it was planned for: the
    # recipe's (`recipes/cpu_backend.py`: oneDNN on unless switched off).
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "0"
    forms = onednn or "avx512f" in this_cpu().flags
    planned = re.search(
        r"Its encoder blocks run (\w+), planned for .*; oneDNN (on|off)\): "
        r"serve it with TF_ENABLE_ONEDNN_OPTS=(\d) ",
        result.stderr,
    )
    assert planned, result.stderr[-3000:]
    assert planned.groups() == (
        "serving_graph" if forms else "fast",
        "on" if onednn else "off",
        str(int(onednn)),
    )
    response = rest_predict(
        tf.saved_model.load(str(export_dir / "1")),
        {"instances": ["a good film", "bad"]},
    )
    assert [
        p["label"] in ("negative", "positive") for p in response["predictions"]
    ] == [True, True]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(str(vocab_file)), sequence_length=12
    )
    logits = classifier.predict(
        preprocessor(tf.constant(["a good film", "bad"])), verbose=0
    )
    probabilities = tf.nn.softmax(logits).numpy()
    got = [p["probabilities"] for p in response["predictions"]]
    assert abs(probabilities - got).max() <= 1e-5


@pytest.mark.parametrize(
    "arguments, message",
    [
        ([], "Nothing to export: pass --model=FILE.keras"),
        # A vocabulary without a model: the same message, no TypeError.
        pytest.param(
            ["--vocab_file=vocab.txt"],
            "Nothing to export",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["--model=clf.keras"], "does not exist", marks=pytest.mark.slow
        ),
        pytest.param(
            ["--checkpoint=c", "--export_options={doc_stride: 1}"],
            "is not JSON",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["--checkpoint=c", "--precision=bfloat16", "--quantize=int8"],
            "quantize='int8' and precision='bfloat16'",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["--checkpoint=c", "--calibration_file=c.txt"],
            "--calibration_file calibrates int8 layers: pass --quantize=int8",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_export_recipe_usage_errors(tmp_path, arguments, message):
    result = run_export_recipe(
        f"--export_dir={tmp_path}",
        *arguments,
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_export_recipe_takes_the_preprocessor_a_keras_model_carries(tmp_path):
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
    )
    classifier = keras_bert.BertClassifier(
        backbone, num_classes=2, preprocessor=preprocessor
    )
    classifier.save(tmp_path / "clf.keras")
    result = run_export_recipe(
        f"--model={tmp_path / 'clf.keras'}",
        f"--export_dir={tmp_path / 'served'}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served = tf.saved_model.load(str(tmp_path / "served" / "1"))
    texts = ["a good film", "bad"]
    got = served.signatures["serving_default"](text=tf.constant(texts))
    expected = tf.nn.softmax(classifier.predict(texts, verbose=0)).numpy()
    assert abs(expected - got["probabilities"].numpy()).max() <= 1e-6

    # Without a preprocessor, the recipe asks for the vocabulary.
    keras_bert.BertClassifier(backbone, num_classes=2).save(
        tmp_path / "bare.keras"
    )
    result = run_export_recipe(
        f"--model={tmp_path / 'bare.keras'}",
        f"--export_dir={tmp_path / 'bare'}",
    )
    assert result.returncode != 0
    assert "carries no preprocessor" in result.stderr
    assert "--vocab_file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_masked_lm_checkpoint_exports_fill_mask_or_embeddings(tmp_path):
    """--task=masked_lm serves fill-mask; --task=auto, as before, the
    backbone's embeddings."""
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    keras_bert.checkpoints.save_huggingface(
        keras_bert.BertMaskedLM(backbone), tokenizer, str(tmp_path / "mlm")
    )
    answers = {}
    for task, options in (
        ("masked_lm", ['--export_options={"top_k": 3}']),
        ("auto", []),
    ):
        result = run_export_recipe(
            f"--checkpoint={tmp_path / 'mlm'}",
            f"--task={task}",
            f"--export_dir={tmp_path / task}",
            "--sequence_length=12",
            *options,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        serve = tf.saved_model.load(str(tmp_path / task / "1")).signatures[
            "serving_default"
        ]
        answers[task] = serve(text=tf.constant(["a [MASK] film"]))
    assert answers["masked_lm"]["token"].shape == (1, 1, 3)
    assert answers["masked_lm"]["num_masks"].numpy().tolist() == [1]
    assert sorted(answers["auto"]) == ["mean_pooled_output", "pooled_output"]
