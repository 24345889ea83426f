"""A new head is one model class and one checkpoint-head record.

`ToyScorer` is defined here only, like a user's own head: a model class
(`keras_bert.models.Task`), one `register_checkpoint_head` call that
says how checkpoints hold it and one `register_endpoints` call that says
what it serves. Saving it as a Hugging Face checkpoint, reading it back
(by class and by `"auto"`), reading its Google-layout names and
exporting it all work with no edit to keras_bert and no list of tasks
anywhere.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.checkpoints import CheckpointHead
from keras_bert.checkpoints import google_reader
from keras_bert.checkpoints import register_checkpoint_head
from keras_bert.models import Task
from keras_bert.models.bert_backbone import keras_inputs
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config


class ToyScorer(Task):
    """One score per sequence from `pooled_output`."""

    TASK_NAME = "toy_scoring"

    def __init__(self, backbone, scale=1.0, **kwargs):
        self.backbone = backbone
        self.score_dense = keras.layers.Dense(1, name="score")
        inputs = keras_inputs()
        score = self.score_dense(backbone(inputs)["pooled_output"]) * scale
        super().__init__(inputs=inputs, outputs=score, **kwargs)
        self.scale = scale

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


register_checkpoint_head(
    ToyScorer,
    CheckpointHead(
        groups={"scorer": "toy_scorer."},
        weights=lambda model: {"scorer": {"toy_scorer": model.score_dense}},
        google_names={"toy/score_weights": "toy_scorer.weight"},
        huggingface_architecture="ToyScorerForTests",
        config_from_checkpoint=lambda checkpoint, backbone_config, scale=2.0: {
            "scale": scale
        },
    ),
)


def toy_endpoints(model, preprocessor):
    def serve(text):
        return {"score": model(preprocessor(text))[:, 0]}

    return {
        "serving_default": (
            serve,
            [tf.TensorSpec([None], tf.string, name="text")],
        )
    }


keras_bert.serving.register_endpoints(ToyScorer, toy_endpoints)


@pytest.fixture
def toy():
    model = ToyScorer(keras_bert.BertBackbone(**tiny_backbone_config()))
    model.score_dense.bias.assign([0.5])
    return model


def test_registered_without_any_list():
    assert ToyScorer in Task.registry
    # The recipes' head flags (export.py --task, convert_checkpoint.py
    # --model) are built from the same registry, by TASK_NAME.
    assert Task.by_name()["toy_scoring"] is ToyScorer
    assert keras_bert.serving.servable_task_names()["toy_scoring"] is ToyScorer
    names = {
        "classifier": keras_bert.BertClassifier,
        "masked_lm": keras_bert.BertMaskedLM,
        "question_answering": keras_bert.BertQuestionAnswerer,
        "token_classification": keras_bert.BertTokenClassifier,
    }
    assert {k: Task.by_name()[k] for k in names} == names
    # Every keras_bert head serves (a masked LM: fill-mask).
    assert set(names) <= set(keras_bert.serving.servable_task_names())


def test_huggingface_round_trip_by_class_and_auto(toy, tmp_path):
    keras_bert.checkpoints.save_huggingface(toy, None, str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["ToyScorerForTests"]
    checkpoint = keras_bert.checkpoints.read_checkpoint(str(tmp_path))
    assert set(checkpoint.tensors) >= {"toy_scorer.weight", "toy_scorer.bias"}

    inputs = backbone_inputs()
    expected = toy(inputs).numpy()
    loaded = ToyScorer.from_checkpoint(str(tmp_path), scale=1.0)
    np.testing.assert_array_equal(loaded(inputs).numpy(), expected)
    auto = keras_bert.checkpoints.load_checkpoint(str(tmp_path), "auto")
    assert type(auto) is ToyScorer and auto.scale == 2.0  # its default
    np.testing.assert_allclose(auto(inputs).numpy(), 2 * expected, rtol=1e-6)


def test_unknown_argument_names_its_owner(toy, tmp_path):
    keras_bert.checkpoints.save_huggingface(toy, None, str(tmp_path))
    with pytest.raises(ValueError, match="`scale` applies to ToyScorer only"):
        keras_bert.BertBackbone.from_checkpoint(str(tmp_path), scale=3.0)


def test_google_names_come_from_the_class():
    assert google_reader.google_to_huggingface_name("toy/score_weights") == (
        "toy_scorer.weight",
        False,
    )
    assert google_reader.huggingface_to_google_name("toy_scorer.weight") == (
        "toy/score_weights",
        False,
    )
    # The question-answering head as run_squad.py names it.
    assert google_reader.google_to_huggingface_name(
        "cls/squad/output_weights"
    ) == (
        "qa_outputs.weight",
        False,
    )


def test_export_uses_the_model_endpoints(toy, tmp_path):
    tokenizer = keras_bert.BertTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    )
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=8)
    path = keras_bert.serving.export_saved_model(
        toy, preprocessor, str(tmp_path)
    )
    serve = tf.saved_model.load(path).signatures["serving_default"]
    scores = serve(text=tf.constant(["a b", "b"]))["score"].numpy()
    expected = toy(preprocessor(tf.constant(["a b", "b"])))[:, 0].numpy()
    np.testing.assert_allclose(scores, expected, rtol=1e-6)


def test_a_task_without_serving_says_so():
    class UnservedScorer(Task):
        """A head nobody registered endpoints for."""

        def __init__(self, backbone, **kwargs):
            self.backbone = backbone
            inputs = keras_inputs()
            score = keras.layers.Dense(1)(backbone(inputs)["pooled_output"])
            super().__init__(inputs=inputs, outputs=score, **kwargs)

    try:
        model = UnservedScorer(
            keras_bert.BertBackbone(**tiny_backbone_config())
        )
        tokenizer = keras_bert.BertTokenizer(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        )
        preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=8)
        with pytest.raises(
            ValueError,
            match="UnservedScorer has no serving signature.*export its "
            "`.backbone`",
        ):
            keras_bert.serving.export_saved_model(model, preprocessor, "unused")
    finally:
        # Out of the task registry again, as a user's class never was.
        Task.registry.remove(UnservedScorer)


def test_a_subclass_uses_its_parents_checkpoint_head(tmp_path):
    class CalibratedScorer(ToyScorer):
        pass

    model = CalibratedScorer(keras_bert.BertBackbone(**tiny_backbone_config()))
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    loaded = CalibratedScorer.from_checkpoint(str(tmp_path), scale=1.0)
    np.testing.assert_array_equal(
        loaded(backbone_inputs()).numpy(), model(backbone_inputs()).numpy()
    )
    Task.registry.remove(CalibratedScorer)


def test_a_task_without_checkpoint_head_says_how_to_add_one(tmp_path):
    class Unregistered(Task):
        def __init__(self, backbone, **kwargs):
            self.backbone = backbone
            inputs = keras_inputs()
            outputs = backbone(inputs)["pooled_output"]
            super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    Task.registry.remove(Unregistered)
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    keras_bert.checkpoints.save_huggingface(backbone, None, str(tmp_path))
    with pytest.raises(TypeError, match="register_checkpoint_head"):
        Unregistered.from_checkpoint(str(tmp_path))
    with pytest.raises(TypeError, match="register_checkpoint_head"):
        keras_bert.checkpoints.save_huggingface(
            Unregistered(backbone), None, str(tmp_path)
        )


@pytest.mark.parametrize(
    "build",
    [
        lambda backbone: keras_bert.BertClassifier(backbone, num_classes=2),
        keras_bert.BertMaskedLM,
    ],
    ids=["classifier", "masked_lm"],
)
def test_summary_lists_the_backbone_as_one_layer(build):
    # Heads on `outputs_at` call the backbone's layers in their own graph;
    # `summary()` shows them as the backbone, as `layers` does.
    model = build(keras_bert.BertBackbone(**tiny_backbone_config()))
    lines = []
    model.summary(print_fn=lines.append)
    summary = "\n".join(lines)
    assert "(BertBackbone)" in summary
    for inner in ("(TransformerEncoderBlock", "(BertEmbedding)", "(GetItem)"):
        assert inner not in summary
    assert [op.name for op in model.operations] == [
        layer.name for layer in model.layers
    ]
    assert f"Total params: {model.count_params():,}" in summary
