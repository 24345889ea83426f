"""Training epochs whose order a resumed run can replay exactly."""

# Spreads the seeds of one run's epochs away from those of the next seed
# (shuffled_epochs and no_duplicates_epochs seed epoch k of seed s with
# s * EPOCH_SEED_STRIDE + k).
EPOCH_SEED_STRIDE = 100_003


def shuffled_epochs(dataset, batch_size, seed, first_epoch, num_epochs):
    """Batches of epochs `first_epoch, ..., num_epochs - 1`, one after another.

    Each epoch is `dataset` shuffled with a seed made from `seed` and the
    epoch number alone, then batched. A run resumed at epoch `k` therefore
    trains on exactly the batches an uninterrupted run sees from epoch `k`
    on, whatever the run did before it stopped. Pass
    `steps_per_epoch=ceil(num_examples / batch_size)` to `fit`.

    Args:
        dataset: `tf.data.Dataset` of single examples, finite and of known
            length (e.g. from `from_tensor_slices`).
        batch_size: int. Examples per batch (the last batch of each epoch
            may be smaller).
        seed: int or `None`. The run's seed; `None` means `0`.
        first_epoch: int. The first epoch to return (0-based).
        num_epochs: int. The run's number of epochs.

    Returns:
        A `tf.data.Dataset` of batches.

    Example:
    ```python
    dataset = tf.data.Dataset.range(10)
    resumed = shuffled_epochs(dataset, 4, seed=0, first_epoch=1, num_epochs=3)
    # 6 batches: epochs 1 and 2 as an uninterrupted run sees them.
    ```
    """
    if not 0 <= first_epoch < (num_epochs or 0):
        raise ValueError(
            "Expected 0 <= `first_epoch` < `num_epochs`. Received: "
            f"first_epoch={first_epoch!r}, num_epochs={num_epochs!r}"
        )
    num_examples = int(dataset.cardinality())
    if num_examples < 0:
        raise ValueError(
            "Expected a dataset of known length, to shuffle each epoch "
            "whole. Received one of unknown or infinite length; build it "
            "with `tf.data.Dataset.from_tensor_slices` or call "
            "`dataset.apply(tf.data.experimental.assert_cardinality(n))`."
        )
    base_seed = 0 if seed is None else int(seed)
    epochs = [
        dataset.shuffle(
            num_examples,
            seed=base_seed * EPOCH_SEED_STRIDE + epoch,
            reshuffle_each_iteration=False,
        ).batch(batch_size)
        for epoch in range(first_epoch, num_epochs)
    ]
    result = epochs[0]
    for epoch in epochs[1:]:
        result = result.concatenate(epoch)
    return result
