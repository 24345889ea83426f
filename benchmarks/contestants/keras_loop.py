"""keras-bert trained step by step on given batches, every loss kept.

The recipes train with `fit`; the comparisons that look at each step's
loss (`fine_tuning_parity.py`, `ner_head_init.py`) train a compiled model
with `train_on_batch` on exactly the batches the PyTorch loop gets.

```python
losses = keras_loop.train_on_batches(
    model, batches, learning_rate=5e-5, epsilon_hat=False
)
```
"""

INPUTS = ("token_ids", "segment_ids", "padding_mask")


def train_on_batches(
    model, batches, learning_rate, warmup_fraction=0.1, **adamw
):
    """Compiles `model` with BERT's fine-tuning optimizer and trains it on
    each batch once; returns the losses.

    The optimizer is `keras_bert.training.create_adamw(**adamw)` on a
    linear warmup over the first `int(warmup_fraction × len(batches))`
    steps then a linear decay to 0 at the last batch.

    Args:
        model: a keras-bert task model (its own loss).
        batches: sequence of dicts of numpy arrays: the backbone's inputs
            and `labels`.
        learning_rate: float. The peak rate.
        warmup_fraction: float. Defaults to 0.1.
        **adamw: more arguments of `create_adamw` (`epsilon_hat`, ...).

    Returns:
        The list of per-step losses (float).
    """
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    steps = len(batches)
    schedule = WarmupLinearDecay(
        learning_rate, steps, int(warmup_fraction * steps)
    )
    model.compile(optimizer=create_adamw(schedule, **adamw))
    losses = []
    for batch in batches:
        inputs = {name: batch[name] for name in INPUTS}
        model.reset_metrics()
        result = model.train_on_batch(inputs, batch["labels"], return_dict=True)
        losses.append(float(result["loss"]))
    return losses
