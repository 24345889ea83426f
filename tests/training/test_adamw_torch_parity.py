"""Fine-tuning steps equal transformers + torch.optim.AdamW's, step by step.

A tiny random `transformers.BertForTokenClassification` is saved and loaded
by us; both then train on the same batches (repeated tokens, padding,
ignored labels) with dropout off: AdamW (weight decay 0.01 except biases and
LayerNorm), linear warmup then decay, clipping to a global norm (which
binds at every step: 0.1 for this tiny model). With `epsilon_hat=False`
the losses and weights follow PyTorch's to float32 rounding; Keras'
default epsilon hat does not.
On real all-MiniLM-L6-v2 weights and CoNLL-2003 batches,
`benchmarks/task_race.py --task=ner --step_parity` made the same
comparison (at commit 193fb03; docs/fine_tuning.md).
"""

import numpy as np
import pytest

import keras_bert
from keras_bert.models.bert_backbone import BACKBONE_INPUTS
from keras_bert.training import WarmupLinearDecay
from keras_bert.training import create_adamw
from keras_bert.training.losses import IGNORED_LABEL
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers

require_references()

STEPS = 10
WARMUP = 3
LEARNING_RATE = 1e-3
NUM_LABELS = 5
# A tiny model's gradients are large: clipping at 0.1 binds at every step
# and makes them small next to epsilon, as 1.0 does for a BERT's.
CLIPNORM = 0.1
EPSILON = 1e-5


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny random BERT token classifier in Hugging Face's layout."""
    import torch

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=NUM_LABELS,
    )
    model = transformers.BertForTokenClassification(config)
    directory = str(tmp_path_factory.mktemp("tiny_tagger"))
    model.save_pretrained(directory)
    return directory


def batches():
    rng = np.random.default_rng(0)
    out = []
    for _ in range(STEPS):
        lengths = rng.integers(4, 12, size=4)
        token_ids = rng.integers(5, 12, size=(4, 12))  # few ids: repeats
        mask = np.arange(12) < lengths[:, None]
        labels = token_ids % NUM_LABELS  # learnable: a tag per token
        labels[:, 0] = IGNORED_LABEL
        labels[rng.random((4, 12)) < 0.3] = IGNORED_LABEL
        out.append(
            {
                "token_ids": np.where(mask, token_ids, 0).astype("int32"),
                "segment_ids": np.zeros((4, 12), "int32"),
                "padding_mask": mask.astype("int32"),
                "labels": np.where(mask, labels, IGNORED_LABEL),
            }
        )
    return out


def torch_run(directory):
    import torch

    model = transformers.BertForTokenClassification.from_pretrained(directory)
    model.train()  # dropout is 0: only the mode
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if name.endswith("bias") or "LayerNorm" in name:
            no_decay.append(parameter)
        else:
            decay.append(parameter)
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": 0.01},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=LEARNING_RATE,
        betas=(0.9, 0.999),
        eps=EPSILON,
    )
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, WARMUP, STEPS
    )
    losses, norms = [], []
    for batch in batches():
        outputs = model(
            **torch_inputs(batch),
            labels=torch.tensor(batch["labels"], dtype=torch.long),
        )
        outputs.loss.backward()
        norms.append(
            float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIPNORM))
        )
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(outputs.loss.item())
    return losses, norms, model.classifier.weight.detach().numpy().T


def keras_run(directory, epsilon_hat):
    model = keras_bert.BertTokenClassifier.from_checkpoint(directory)
    assert model.dropout == 0.0
    model.compile(
        optimizer=create_adamw(
            WarmupLinearDecay(LEARNING_RATE, STEPS, WARMUP),
            epsilon=EPSILON,
            global_clipnorm=CLIPNORM,
            epsilon_hat=epsilon_hat,
        )
    )
    losses = []
    for batch in batches():
        model.reset_metrics()
        inputs = {name: batch[name] for name in BACKBONE_INPUTS}
        result = model.train_on_batch(inputs, batch["labels"], return_dict=True)
        losses.append(float(result["loss"]))
    return losses, model.output_dense.kernel.numpy()


def test_training_follows_torch_with_torch_epsilon(checkpoint):
    torch_losses, norms, torch_kernel = torch_run(checkpoint)
    assert min(norms) > CLIPNORM  # clipping changes every step
    losses, kernel = keras_run(checkpoint, epsilon_hat=False)
    np.testing.assert_allclose(losses, torch_losses, rtol=0, atol=1e-5)
    np.testing.assert_allclose(kernel, torch_kernel, rtol=0, atol=1e-5)
    assert torch_losses[-1] < torch_losses[0] - 0.02  # it did learn


def test_keras_epsilon_hat_trains_differently(checkpoint):
    torch_losses, _, _ = torch_run(checkpoint)
    losses, _ = keras_run(checkpoint, epsilon_hat=True)
    assert max(abs(a - b) for a, b in zip(losses, torch_losses)) > 1e-4
