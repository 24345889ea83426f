"""keras-bert trained step by step on given batches, every loss kept: the
comparisons that look at each step's loss train a compiled model with
`train_on_batch` on exactly the batches the PyTorch loop gets."""

INPUTS = ("token_ids", "segment_ids", "padding_mask")


def train_on_batches(
    model, batches, learning_rate, warmup_fraction=0.1, **adamw
):
    """Compiles `model` (a task model, its own loss) with
    `create_adamw(**adamw)` on a linear warmup over `int(warmup_fraction ×
    len(batches))` steps then a linear decay to 0, trains it once on each
    of `batches` (dicts of numpy inputs and `labels`); returns the losses."""
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
