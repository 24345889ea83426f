"""benchmarks/finetune_job.py: the length-grouped PyTorch contestant's
batches and settings, and its rows in the tools table."""

import numpy as np
import pytest

from benchmarks import finetune_job
from benchmarks.finetune import jobs
from benchmarks.finetune import peers
from benchmarks.finetune import tools

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_grouped_order_is_the_trainers_length_grouped_sampler():
    from transformers.trainer_pt_utils import LengthGroupedSampler

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 60, size=700).tolist()
    order = peers.grouped_order(lengths, 32, torch.Generator().manual_seed(5))
    sampler = LengthGroupedSampler(
        32, lengths=lengths, generator=torch.Generator().manual_seed(5)
    )
    np.testing.assert_array_equal(order, list(sampler))
    assert sorted(order.tolist()) == list(range(700))
    # The longest row comes first; batches hold rows of like length.
    assert lengths[order[0]] == max(lengths)

    def spread(rows):
        return np.median(
            [
                np.ptp([lengths[i] for i in rows[k : k + 32]])
                for k in range(0, 700, 32)
            ]
        )

    assert spread(order) < spread(rng.permutation(700)) / 3


def test_padded_batch_pads_to_the_longest_row_of_the_batch():
    encoded = {
        "input_ids": [[2, 5, 3], [2, 5, 6, 7, 3], [2, 3]],
        "token_type_ids": [[0, 0, 0], [0, 0, 0, 0, 0], [0, 0]],
        "attention_mask": [[1, 1, 1], [1, 1, 1, 1, 1], [1, 1]],
    }
    batch = peers.padded_batch(encoded, [2, 0], labels=[1, 0, 1])
    np.testing.assert_array_equal(
        batch["input_ids"].numpy(), [[2, 3, 0], [2, 5, 3]]
    )
    np.testing.assert_array_equal(
        batch["attention_mask"].numpy(), [[1, 1, 0], [1, 1, 1]]
    )
    assert batch["input_ids"].dtype == torch.int64
    np.testing.assert_array_equal(batch["labels"].numpy(), [1, 1])
    assert "labels" not in peers.padded_batch(encoded, [1])


def test_the_pytorch_settings_are_the_recipes():
    from keras_bert.training import TRAINING_DEFAULTS

    defaults = TRAINING_DEFAULTS["classifier"]
    settings = jobs.TORCH_SETTINGS
    assert settings["learning_rate"] == defaults.learning_rate
    assert settings["batch_size"] == defaults.batch_size
    assert settings["warmup_fraction"] == defaults.warmup_fraction
    assert settings["weight_decay"] == defaults.weight_decay
    assert settings["adam_beta_1"] == defaults.beta_1
    assert settings["adam_beta_2"] == defaults.beta_2
    assert settings["adam_epsilon"] == defaults.epsilon
    assert settings["clipnorm"] == defaults.global_clipnorm
    # The race's job: 1 epoch of sequence 128, evaluated in batches of 64.
    assert settings["epochs"] == 1 and settings["sequence_length"] == 128
    assert settings["eval_batch_size"] == 64
    assert "torch_grouped" in finetune_job.WORKERS
    assert "torch_grouped" in jobs.RACES["tools"][1].split()


def _record(contestant, k, train_seconds, total_seconds, accuracy):
    return {
        "contestant": contestant,
        "round": k,
        "seed": k,
        "num_train_examples": 6917,
        "train_seconds": train_seconds,
        "eval_seconds": 5.0,
        "total_seconds": total_seconds,
        "train_examples_per_second": 6917 / train_seconds,
        "dev_accuracy": accuracy,
        "command": "python benchmarks/finetune_job.py --rounds=1",
        "load_average": 1.5,
        "machine": "AMD EPYC, 2 cores; tensorflow 2.21.0",
    }


def test_the_tools_table_pairs_the_pytorch_loop_with_the_recipe():
    records = {
        ("recipe", 0): _record("recipe", 0, 60.0, 80.0, 0.83),
        ("torch_grouped", 0): _record("torch_grouped", 0, 90.0, 100.0, 0.84),
    }
    text = "\n".join(tools.tools_summary(records))
    assert "| torch_grouped | recipe | 0 | 1.50 | 1.25 | 1.50, 1.25 |" in text
    assert "| torch_grouped | 0 | 76.9 | 90.0 | 5.0 | 100.0 | 0.8400" in text
    assert "torch_grouped is a plain PyTorch loop" in text
    assert "recipe_bf16 and torch_grouped_bf16" not in text


def test_the_bfloat16_pytorch_loop_is_paired_with_the_bfloat16_recipe():
    records = {
        ("recipe", 0): _record("recipe", 0, 60.0, 80.0, 0.83),
        ("recipe_bf16", 0): _record("recipe_bf16", 0, 30.0, 50.0, 0.83),
        ("torch_grouped_bf16", 0): _record(
            "torch_grouped_bf16", 0, 45.0, 75.0, 0.84
        ),
    }
    text = "\n".join(tools.tools_summary(records))
    # Against recipe_bf16 (45/30, 75/50), not the float32 recipe (45/60).
    assert "| torch_grouped_bf16 | recipe_bf16 | 0 | 1.50 | 1.50 |" in text
    # The bfloat16 recipe against the float32 one: what bfloat16 buys.
    assert "| recipe_bf16 | recipe | 0 | 0.50 | 0.62 |" in text
    assert "recipe_bf16 and torch_grouped_bf16 are the two" in text
    assert jobs.RECIPES["recipe_bf16"] == {"mixed_precision": "mixed_bfloat16"}
