"""benchmarks/contestants/torch_loop.py: the PyTorch reference loop.

On a tiny torch model (a dense layer, a LayerNorm, dropout, a head):
the loop gives the same losses and weights as the loop the SQuAD and NER
benchmarks each wrote before it was shared, and its schedule, weight-decay
groups and clipping are BERT's; a resumed run ends where an uninterrupted
one does.
"""

import numpy as np
import pytest

from benchmarks.contestants import torch_loop

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

SETTINGS = dict(
    batch_size=6,
    epochs=2,
    learning_rate=0.05,
    warmup_fraction=0.25,
    weight_decay=0.01,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_epsilon=1e-6,
    clipnorm=0.5,
    seed=0,
)
ROWS = 20  # 4 steps an epoch, the last one of 2 rows; 8 in all, 2 warmup


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(4, 8)
        self.LayerNorm = torch.nn.LayerNorm(8)
        self.dropout = torch.nn.Dropout(0.1)
        self.classifier = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.classifier(self.dropout(self.LayerNorm(self.dense(x))))


def _data():
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.normal(size=(ROWS, 4)).astype("float32"))
    y = torch.from_numpy(rng.integers(0, 3, ROWS))
    return x, y


def _model():
    torch.manual_seed(0)
    return Tiny()


def _order(epoch):
    return np.random.default_rng([SETTINGS["seed"], epoch]).permutation(ROWS)


def _step_loss(model, x, y, scale=1.0):
    def step_loss(rows):
        rows = torch.from_numpy(rows)
        logits = model(x[rows])
        return scale * torch.nn.functional.cross_entropy(logits, y[rows])

    return step_loss


def _previous_loop(model, x, y):
    """The SQuAD race's `train_torch` loop before it was shared."""
    import math

    import transformers

    optimizer = torch_loop.adamw(
        model,
        SETTINGS["learning_rate"],
        weight_decay=SETTINGS["weight_decay"],
        betas=(SETTINGS["adam_beta_1"], SETTINGS["adam_beta_2"]),
        eps=SETTINGS["adam_epsilon"],
    )
    steps_per_epoch = math.ceil(ROWS / SETTINGS["batch_size"])
    total_steps = steps_per_epoch * SETTINGS["epochs"]
    warmup_steps = int(SETTINGS["warmup_fraction"] * total_steps)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, warmup_steps, total_steps
    )
    losses = []
    model.train()
    for epoch in range(SETTINGS["epochs"]):
        order = torch.from_numpy(_order(epoch))
        for batch in range(steps_per_epoch):
            first = batch * SETTINGS["batch_size"]
            index = order[first : first + SETTINGS["batch_size"]]
            loss = torch.nn.functional.cross_entropy(model(x[index]), y[index])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(
                model.parameters(), SETTINGS["clipnorm"]
            )
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(loss.item())
    return losses


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)


def test_same_losses_and_weights_as_the_previous_loop():
    x, y = _data()
    model = _model()
    expected_losses = _previous_loop(model, x, y)
    expected = _weights(model)

    model = _model()
    run = torch_loop.fine_tune(
        model, SETTINGS, ROWS, _order, _step_loss(model, x, y)
    )
    assert run["losses"] == expected_losses
    _assert_same_weights(_weights(model), expected)
    assert run["step"] == run["total_steps"] == 8
    assert run["warmup_steps"] == 2
    assert run["trained_windows"] == 2 * ROWS
    assert [e["epoch"] for e in run["epochs"]] == [1, 2]
    assert run["epochs"][1]["loss"] == pytest.approx(
        np.mean(expected_losses[4:])
    )


def test_schedule_decay_groups_and_clipping():
    x, y = _data()
    model = _model()
    names = {id(p): name for name, p in model.named_parameters()}
    seen = []

    def before_step(optimizer, args, kwargs):
        norm = torch.sqrt(
            sum(
                (p.grad**2).sum()
                for group in optimizer.param_groups
                for p in group["params"]
            )
        )
        decays = {
            names[id(p)]: group["weight_decay"]
            for group in optimizer.param_groups
            for p in group["params"]
        }
        seen.append((optimizer.param_groups[0]["lr"], decays, float(norm)))

    from torch.optim.optimizer import register_optimizer_step_pre_hook

    handle = register_optimizer_step_pre_hook(before_step)
    try:
        # A loss 100 times larger: every gradient's norm is above 0.5.
        torch_loop.fine_tune(
            model, SETTINGS, ROWS, _order, _step_loss(model, x, y, 100.0)
        )
    finally:
        handle.remove()

    peak = SETTINGS["learning_rate"]
    # Linear warmup from 0 over 2 steps, then linear decay to 0 at step 8.
    expected = [0.0, peak / 2] + [peak * (8 - s) / 6 for s in range(2, 8)]
    assert [lr for lr, _, _ in seen] == pytest.approx(expected)
    assert seen[0][1] == {
        "dense.weight": 0.01,
        "dense.bias": 0.0,
        "LayerNorm.weight": 0.0,
        "LayerNorm.bias": 0.0,
        "classifier.weight": 0.01,
        "classifier.bias": 0.0,
    }
    assert [norm for _, _, norm in seen] == pytest.approx([0.5] * 8, abs=1e-5)


def test_evaluation_after_every_epoch_in_eval_mode():
    x, y = _data()
    model = _model()
    modes = []

    def evaluate(epoch):
        modes.append(model.training)
        return {"metrics": {"epoch_seen": epoch}}

    run = torch_loop.fine_tune(
        model, SETTINGS, ROWS, _order, _step_loss(model, x, y), evaluate
    )
    assert modes == [False, False]
    assert model.training
    assert [e["metrics"]["epoch_seen"] for e in run["epochs"]] == [0, 1]
    assert all(e["eval_seconds"] >= 0 for e in run["epochs"])


def test_resumed_run_ends_as_an_uninterrupted_one(tmp_path):
    x, y = _data()
    model = _model()
    uninterrupted = torch_loop.fine_tune(
        model, SETTINGS, ROWS, _order, _step_loss(model, x, y)
    )
    expected = _weights(model)

    path = str(tmp_path / "checkpoint.pt")
    resume = dict(checkpoint_path=path, checkpoint_every=2, resume_key="k")
    model = _model()
    first = torch_loop.fine_tune(
        model,
        SETTINGS,
        ROWS,
        _order,
        _step_loss(model, x, y),
        max_steps=3,
        **resume,
    )
    assert first["step"] == 3 and len(first["epochs"]) == 1
    model = _model()
    second = torch_loop.fine_tune(
        model, SETTINGS, ROWS, _order, _step_loss(model, x, y), **resume
    )
    assert second["resumed_at_step"] == 3
    assert second["losses"] == uninterrupted["losses"]
    assert [e["epoch"] for e in second["epochs"]] == [1, 2]
    _assert_same_weights(_weights(model), expected)

    with pytest.raises(ValueError, match="from another run"):
        torch_loop.fine_tune(
            model,
            SETTINGS,
            ROWS,
            _order,
            _step_loss(model, x, y),
            checkpoint_path=path,
            checkpoint_every=2,
            resume_key="other",
        )


def test_predict_keeps_the_order_and_restores_training_mode():
    model = _model()
    x, _ = _data()
    order = np.arange(ROWS)[::-1].copy()
    outputs = torch_loop.predict(
        model, lambda rows: model(x[torch.from_numpy(rows)]), ROWS, 8, order
    )
    assert [len(rows) for rows, _ in outputs] == [8, 8, 4]
    np.testing.assert_array_equal(
        np.concatenate([rows for rows, _ in outputs]), order
    )
    model.eval()
    expected = model(x[torch.from_numpy(order)]).detach()
    torch.testing.assert_close(
        torch.cat([output for _, output in outputs]), expected
    )
    assert not outputs[0][1].requires_grad


def test_train_on_calls_a_forward_without_a_truth_value():
    class Output:
        def __init__(self, loss):
            self.loss = loss

    class Wrapped(torch.nn.Module):
        """Like `torch.compile`'s module: `len` (so `bool`) raises."""

        def __init__(self, model):
            super().__init__()
            self.model, self.calls = model, 0

        def __len__(self):
            raise TypeError("no len()")

        def forward(self, x, y):
            self.calls += 1
            return Output(torch.nn.functional.cross_entropy(self.model(x), y))

    model = _model()
    x, y = _data()
    forward = Wrapped(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [{"x": x[:6], "y": y[:6]}, {"x": x[6:], "y": y[6:]}]
    losses = list(
        torch_loop.train_on(model, batches, optimizer, forward=forward)
    )
    assert forward.calls == 2 and len(losses) == 2


def test_step_calls_after_backward_between_gradients_and_update():
    # finetune_job.py --race=profile times the backward pass through this hook.
    model = _model()
    x, y = _data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = _weights(model)
    seen = []

    def after_backward():
        seen.append(model.dense.weight.grad is not None)
        _assert_same_weights(_weights(model), before)

    loss = _step_loss(model, x, y)(np.arange(6))
    torch_loop.step(model, optimizer, loss, after_backward=after_backward)
    assert seen == [True]
    assert model.dense.weight.grad is None or not model.dense.weight.grad.any()
