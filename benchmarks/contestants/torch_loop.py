"""The one PyTorch training loop of the benchmarks.

`step` is one optimizer step; `train_on` runs it over given batches (the
speed races); `fine_tune` is BERT's fine-tuning as Hugging Face's examples
run it: AdamW without decay on biases and LayerNorm weights, a linear
warmup over `int(warmup_fraction × steps)` steps then a linear decay to 0,
clipping to a global norm, every step's loss and wall and CPU time
recorded, resumable from a checkpoint. A task passes in only its own
parts: the model (`from_pretrained`), each epoch's row order, the loss of
a batch of rows, the scoring after an epoch, and its `SETTINGS`
(`batch_size`, `epochs`, `learning_rate`, `warmup_fraction`,
`weight_decay`, `adam_beta_1`, `adam_beta_2`, `adam_epsilon`, `clipnorm`).
"""

import math
import os
import time

import numpy as np
from absl import logging


def adamw(
    model, learning_rate, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-6
):
    """`torch.optim.AdamW` as BERT fine-tunes: no decay on biases and
    LayerNorm weights (the parameter groups of Hugging Face's examples)."""
    import torch

    groups = [
        {"params": [], "weight_decay": weight_decay},
        {"params": [], "weight_decay": 0.0},
    ]
    for name, parameter in model.named_parameters():
        no_decay = name.endswith("bias") or "LayerNorm" in name
        groups[no_decay]["params"].append(parameter)
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, eps=eps)


def from_pretrained(model_class, path, dropout, seed, **kwargs):
    """`model_class.from_pretrained(path)` in float32, with `dropout` on
    the hidden states and the attention probabilities; the fresh head is
    drawn right after `torch.manual_seed(seed)`, so that it depends on the
    seed only, not on what ran before."""
    import torch

    torch.manual_seed(seed)
    model = model_class.from_pretrained(
        path,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        **kwargs,
    )
    return model.to(torch.float32)


def autocast(precision):
    """`torch.autocast` to bfloat16 for `mixed_bfloat16` (what transformers'
    Trainer runs with `bf16=True` on a CPU); for float32, no change."""
    import torch

    return torch.autocast(
        "cpu", dtype=torch.bfloat16, enabled=precision == "mixed_bfloat16"
    )


def step(
    model, optimizer, loss, clipnorm=None, scheduler=None, after_backward=None
):
    """One optimizer step on `loss` (a scalar of `model`'s forward pass):
    back-propagation, clipping to the global norm `clipnorm`, the
    optimizer, the schedule. `after_backward()` is called between the
    back-propagation and the clipping (a profile's clock). Returns the
    loss as a float."""
    import torch

    loss.backward()
    if after_backward is not None:
        after_backward()
    if clipnorm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clipnorm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad()
    return loss.item()


def train_on(
    model, batches, optimizer, precision="float32", clipnorm=None, forward=None
):
    """Trains `model` once on each of `batches` (dicts of its keyword
    inputs, labels included; `forward`: what to call instead of `model`,
    e.g. its `torch.compile`), yielding each step's loss as the step ends:
    a caller times the steps between the yields."""
    model.train()
    # Not `forward or model`: a compiled module has no truth value.
    forward = model if forward is None else forward
    for batch in batches:
        with autocast(precision):
            loss = forward(**batch).loss
        yield step(model, optimizer, loss, clipnorm)


def fine_tune(
    model, settings, num_examples, epoch_order, step_loss, evaluate=None,
    max_steps=None, log_every=10, checkpoint_path=None, checkpoint_every=None,
    resume_key=None,
):  # fmt: skip
    """Trains `model` for `settings["epochs"]` epochs; returns the record.

    Every epoch cuts `epoch_order(epoch)` (`num_examples` row indices) into
    batches of `settings["batch_size"]` rows and steps on `step_loss(rows)`
    (a scalar torch loss) of each; then `evaluate(epoch)` (in eval mode)
    returns what the epoch's record adds. With `checkpoint_path`, the
    model, optimizer, schedule, torch's random state and the record are
    saved every `checkpoint_every` steps and at the end, and a run
    restarted with the same path and `resume_key` resumes where it
    stopped. `max_steps` stops early (smoke runs).

    Returns a dict: `losses` (per step), `epochs` (per epoch: `epoch` from
    1, `train_seconds`, `train_cpu_seconds`, `loss` (mean), and with
    `evaluate` `eval_seconds` and what it returned), `step`,
    `resumed_at_step`, `total_steps`, `warmup_steps`, `trained_windows`,
    `train_seconds` and `train_cpu_seconds` (evaluation excluded; CPU time
    too, since on a shared machine wall time measures the others as well).
    """
    import torch
    import transformers

    optimizer = adamw(
        model,
        settings["learning_rate"],
        weight_decay=settings["weight_decay"],
        betas=(settings["adam_beta_1"], settings["adam_beta_2"]),
        eps=settings["adam_epsilon"],
    )
    batch_size = settings["batch_size"]
    steps_per_epoch = math.ceil(num_examples / batch_size)
    total_steps = steps_per_epoch * settings["epochs"]
    warmup_steps = int(settings["warmup_fraction"] * total_steps)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, warmup_steps, total_steps
    )
    logging.info(
        "training: %d windows, %d steps (%d per epoch), warmup %d",
        num_examples, total_steps, steps_per_epoch, warmup_steps,
    )  # fmt: skip
    record = dict(losses=[], epochs=[], step=0, trained_windows=0)
    record.update(train_seconds=0.0, train_cpu_seconds=0.0)
    parts = dict(model=model, optimizer=optimizer, scheduler=scheduler)
    if checkpoint_path and os.path.exists(checkpoint_path):
        state = torch.load(checkpoint_path, weights_only=False)
        if state.get("resume_key") != resume_key:
            raise ValueError(
                f"{checkpoint_path} is from another run "
                f"({state.get('resume_key')}), not {resume_key}. Pass a "
                "fresh --run_dir, or delete the checkpoint to start over."
            )
        for name, part in parts.items():
            part.load_state_dict(state[name])
        torch.set_rng_state(state["torch_rng"])
        record.update(state["record"])
        # An epoch cut short (--max_steps) is trained on and scored again.
        record["epochs"] = [
            e
            for e in record["epochs"]
            if e["epoch"] * steps_per_epoch <= record["step"]
        ]
        logging.info(
            "resumed at step %d from %s", record["step"], checkpoint_path
        )

    def save_checkpoint():
        state = {"torch_rng": torch.get_rng_state(), "record": record}
        for name, part in parts.items():
            state[name] = part.state_dict()
        torch.save(dict(state, resume_key=resume_key), checkpoint_path + ".tmp")
        os.replace(checkpoint_path + ".tmp", checkpoint_path)

    losses, resumed_step = record["losses"], record["step"]
    model.train()
    for epoch in range(len(record["epochs"]), settings["epochs"]):
        done = record["train_seconds"], record["train_cpu_seconds"]
        start, cpu_start = time.perf_counter(), time.process_time()

        def clock():
            record["train_seconds"] = done[0] + time.perf_counter() - start
            record["train_cpu_seconds"] = (
                done[1] + time.process_time() - cpu_start
            )

        order = epoch_order(epoch)
        for batch in range(steps_per_epoch):
            if epoch * steps_per_epoch + batch < record["step"]:
                continue  # done before an interruption
            if max_steps and record["step"] >= max_steps:
                break
            rows = order[batch * batch_size : (batch + 1) * batch_size]
            loss = step_loss(rows)
            losses.append(
                step(model, optimizer, loss, settings["clipnorm"], scheduler)
            )
            record["step"] += 1
            record["trained_windows"] += len(rows)
            clock()
            steps = record["step"]
            if steps % log_every == 0 or steps == 1:
                logging.info(
                    "epoch %d step %d/%d loss %.4f (mean of last %d: %.4f) "
                    "lr %.3g; %.1f s", epoch, steps, total_steps, losses[-1],
                    min(len(losses), log_every),
                    float(np.mean(losses[-log_every:])),
                    scheduler.get_last_lr()[0], record["train_seconds"],
                )  # fmt: skip
            if checkpoint_path and steps % checkpoint_every == 0:
                save_checkpoint()
        clock()
        epoch_losses = losses[
            epoch * steps_per_epoch : (epoch + 1) * steps_per_epoch
        ]
        summary = {
            "epoch": epoch + 1,
            "train_seconds": record["train_seconds"] - done[0],
            "train_cpu_seconds": record["train_cpu_seconds"] - done[1],
            "loss": float(np.mean(epoch_losses)) if epoch_losses else None,
        }
        if evaluate is not None:
            model.eval()
            eval_start = time.perf_counter()
            scores = evaluate(epoch)
            summary["eval_seconds"] = time.perf_counter() - eval_start
            summary.update(scores)
            model.train()
            logging.info("epoch %d: %s", epoch + 1, str(summary)[:400])
        record["epochs"].append(summary)
        if max_steps and record["step"] >= max_steps:
            break
    if checkpoint_path:
        save_checkpoint()
    record.update(
        resumed_at_step=resumed_step or None,
        total_steps=total_steps,
        warmup_steps=warmup_steps,
    )
    return record


def predict(model, forward, num_rows, batch_size=64, order=None):
    """`forward(rows)` on consecutive batches of `order` (default: the rows
    in order), in eval mode and without gradients; returns the list of
    `(rows, output)`."""
    import torch

    order = np.arange(num_rows) if order is None else order
    model.eval()
    outputs = []
    with torch.no_grad():
        for first in range(0, num_rows, batch_size):
            rows = order[first : first + batch_size]
            outputs.append((rows, forward(rows)))
    model.train()
    return outputs
