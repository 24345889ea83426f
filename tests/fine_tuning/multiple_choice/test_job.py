"""MultipleChoiceFineTuning: its data, batches, accuracy and outputs."""

import json
from unittest import mock

import keras
import numpy as np

import keras_bert
from keras_bert.fine_tuning.multiple_choice import MultipleChoiceFineTuning
from keras_bert.fine_tuning.multiple_choice import write_swag_csv
from tests.helpers import tiny_backbone_config

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
              "sat", "on", "mat", "moon", "dog", "ran", "home"]  # fmt: skip


def test_the_job_trains_on_shuffled_batches_and_scores_each_file(tmp_path):
    train = str(tmp_path / "train.csv")
    write_swag_csv(
        train,
        ["the cat sat", "the dog ran", "the cat ran"],
        [["mat", "moon"], ["home", "mat"], ["moon", "home"]],
        [0, 0, 1],
        headers=["on the", "", ""],
    )
    evaluation = tmp_path / "eval.jsonl"
    evaluation.write_text(
        '{"context": "the dog sat", "choices": ["on the mat", "home"], '
        '"label": 1}\n'
    )

    def model_fn():
        keras.utils.set_random_seed(0)
        backbone = keras_bert.BertBackbone(
            **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
        )
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
        )
        return keras_bert.BertMultipleChoice(backbone), preprocessor

    job = MultipleChoiceFineTuning(train, model_fn, str(evaluation))
    job.load_data()
    model, _ = job.build_model()
    assert job.monitor == "validation/accuracy"
    assert job.num_train_examples == 3
    batches = list(job.train_dataset(2, seed=0, first_epoch=0, num_epochs=2))
    assert [len(labels) for _, labels in batches] == [2, 1, 2, 1]
    first_epoch = np.concatenate([labels for _, labels in batches[:2]])
    assert sorted(first_epoch.tolist()) == [0, 0, 1]
    inputs, _ = batches[0]
    assert inputs["token_ids"].shape[:2] == (2, 2)
    # Cut to the batch's longest pair ("[CLS] the cat sat [SEP] on the mat
    # [SEP]" is 9 tokens), not the preprocessor's 12.
    assert inputs["token_ids"].shape[2] <= 9

    with mock.patch.object(model, "predict", wraps=model.predict) as predict:
        results = job.evaluate(model)
        outputs = job.write_outputs(model, str(tmp_path))
    # write_outputs reuses the probabilities of the same weights.
    assert predict.call_count == 1
    assert set(results) == {"validation"}
    (line,) = open(outputs["predictions"]["validation"]).read().splitlines()
    prediction = json.loads(line)
    assert prediction["label"] == 1
    assert len(prediction["probabilities"]) == 2
    assert results["validation"]["accuracy"] == float(prediction["choice"] == 1)
    assert job.results_extras()["num_choices"] == 2


def test_without_an_eval_file_held_out_rows_are_scored_not_train_rows(
    tmp_path,
):
    train = str(tmp_path / "train.csv")
    contexts = [f"context {i}" for i in range(20)]
    write_swag_csv(train, contexts, [["mat", "moon"]] * 20, [i % 2 for i in
                   range(20)])  # fmt: skip
    job = MultipleChoiceFineTuning(train, None, holdout_fraction=0.25, seed=1)
    job.load_data()
    assert job.monitor == "validation/accuracy"
    assert list(job.eval_sets) == ["validation"]
    held_out = set(job.eval_sets["validation"]["contexts"])
    trained = set(job.train["contexts"])
    assert len(held_out) == 5 and len(trained) == 15
    assert not held_out & trained
    assert job.results_extras()["holdout"]["num_held_out"] == 5
    again = MultipleChoiceFineTuning(train, None, holdout_fraction=0.25, seed=1)
    again.load_data()
    assert set(again.eval_sets["validation"]["contexts"]) == held_out
