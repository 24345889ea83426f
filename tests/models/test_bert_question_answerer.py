"""BertQuestionAnswerer: start and end logits on every token."""

import keras
import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertQuestionAnswerer
from keras_bert.models.bert_question_answerer import MASKED_LOGIT
from keras_bert.models.bert_question_answerer import answer_positions
from tests.helpers import assert_config_complete
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config


def qa_inputs():
    # [CLS] q q [SEP] c c c [SEP] / [CLS] q [SEP] c [SEP] pad pad pad
    return {
        "token_ids": np.array(
            [[2, 9, 8, 3, 10, 11, 12, 3], [2, 9, 3, 10, 3, 0, 0, 0]], "int32"
        ),
        "segment_ids": np.array(
            [[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]], "int32"
        ),
        "padding_mask": np.array(
            [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0, 0]], "int32"
        ),
    }


def test_answer_positions_are_cls_and_context_tokens():
    inputs = qa_inputs()
    allowed = answer_positions(inputs["segment_ids"], inputs["padding_mask"])
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(allowed),
        [[1, 0, 0, 0, 1, 1, 1, 0], [1, 0, 0, 1, 0, 0, 0, 0]],
    )


def test_logits_are_masked_outside_answer_positions():
    model = BertQuestionAnswerer(BertBackbone(**tiny_backbone_config()))
    inputs = qa_inputs()
    outputs = model(inputs)
    allowed = keras.ops.convert_to_numpy(
        answer_positions(inputs["segment_ids"], inputs["padding_mask"])
    )
    for name in ("start_logits", "end_logits"):
        logits = keras.ops.convert_to_numpy(outputs[name])
        assert logits.shape == (2, 8) and logits.dtype == np.float32
        assert np.all(logits[~allowed] == MASKED_LOGIT)
        assert np.all(np.abs(logits[allowed]) < 100)


def test_hand_computed_logits_and_loss():
    """Logits are hidden @ kernel + bias; loss = mean of the two CEs."""
    backbone = BertBackbone(**tiny_backbone_config(dropout=0.0))
    model = BertQuestionAnswerer(backbone)
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(8, 2)).astype("float32")
    model.span_dense.kernel.assign(kernel)
    model.span_dense.bias.assign([0.5, -0.5])
    inputs = qa_inputs()
    hidden = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    expected = hidden @ kernel + np.array([0.5, -0.5], "float32")
    outputs = model(inputs)
    start = keras.ops.convert_to_numpy(outputs["start_logits"])
    end = keras.ops.convert_to_numpy(outputs["end_logits"])
    np.testing.assert_allclose(start[0, 4:7], expected[0, 4:7, 0], atol=1e-5)
    np.testing.assert_allclose(end[0, 4:7], expected[0, 4:7, 1], atol=1e-5)

    labels = {"start_logits": np.array([4, 0]), "end_logits": np.array([6, 3])}

    def cross_entropy(logits, label):
        shifted = logits - logits.max()
        return np.log(np.exp(shifted).sum()) - shifted[label]

    by_hand = np.mean(
        [
            0.5 * cross_entropy(start[i], labels["start_logits"][i])
            + 0.5 * cross_entropy(end[i], labels["end_logits"][i])
            for i in range(2)
        ]
    )
    loss = model.evaluate(inputs, labels, verbose=0, return_dict=True)["loss"]
    np.testing.assert_allclose(loss, by_hand, rtol=1e-5)


def test_fit_learns_to_point_at_a_marked_token():
    """The answer is where token 7 stands in the context."""
    keras.utils.set_random_seed(3)
    backbone = BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=32,
            hidden_dim=32,
            num_heads=4,
            intermediate_dim=64,
            dropout=0.0,
        )  # fmt: skip
    )
    model = BertQuestionAnswerer(backbone)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    rng = np.random.default_rng(0)
    n, length = 128, 12
    tokens = rng.integers(8, 30, size=(n, length)).astype("int32")
    tokens[:, 0], tokens[:, 3], tokens[:, -1] = 2, 3, 3
    answer = rng.integers(4, length - 1, size=(n,))
    tokens[np.arange(n), answer] = 7
    segments = np.zeros_like(tokens)
    segments[:, 4:] = 1
    features = {
        "token_ids": tokens,
        "segment_ids": segments,
        "padding_mask": np.ones_like(tokens),
    }
    labels = {"start_logits": answer, "end_logits": answer}
    history = model.fit(features, labels, batch_size=16, epochs=30, verbose=0)
    assert history.history["start_logits_accuracy"][-1] > 0.9, history.history
    assert history.history["end_logits_accuracy"][-1] > 0.9


def test_pooler_is_frozen_and_not_in_trainable_weights():
    model = BertQuestionAnswerer(BertBackbone(**tiny_backbone_config()))
    trainable = {id(v) for v in model.trainable_variables}
    assert id(model.backbone.pooler_dense.kernel) not in trainable
    assert id(model.span_dense.kernel) in trainable


def test_save_load_and_config():
    model = BertQuestionAnswerer(BertBackbone(**tiny_backbone_config()))
    assert_config_complete(model)
    run_model_saving_test(model, qa_inputs())


def test_checkpoint_round_trip_without_pooler(tmp_path):
    import keras_bert

    model = BertQuestionAnswerer(BertBackbone(**tiny_backbone_config()))
    model.span_dense.bias.assign([1.0, 2.0])
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    checkpoint = keras_bert.checkpoints.read_checkpoint(str(tmp_path))
    assert "qa_outputs.weight" in checkpoint.tensors
    assert not any(n.startswith("bert.pooler") for n in checkpoint.tensors)
    restored = keras_bert.checkpoints.load_checkpoint(str(tmp_path), "auto")
    assert isinstance(restored, BertQuestionAnswerer)
    outputs, expected = restored(qa_inputs()), model(qa_inputs())
    for name in ("start_logits", "end_logits"):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(outputs[name]),
            keras.ops.convert_to_numpy(expected[name]),
        )
