"""A seeded split of a training file's rows into training and evaluation.

What `recipes/classify.py` and `recipes/multiple_choice.py` score when no
`--eval_file` is given: rows held out of training, never the rows trained on.
"""

import numpy as np
from absl import logging


def holdout_split(num_examples, fraction, seed):
    """Training and held-out row indices: disjoint, seeded, sorted.

    `round(fraction * num_examples)` rows (at least one, and at least one
    left to train on) are drawn without replacement by
    `numpy.random.default_rng(seed)`: the same seed gives the same split.

    Args:
        num_examples: int. Rows of the training file.
        fraction: float in `(0, 1)`. The share held out.
        seed: int. The seed of the draw.

    Returns:
        `(train_indices, holdout_indices)`: two sorted int arrays that
        together are `range(num_examples)`.

    Raises:
        ValueError: a fraction outside `(0, 1)`, or fewer than two rows.

    Example:
    ```python
    train, held_out = holdout_split(270, 0.1, seed=0)
    len(train), len(held_out)  # (243, 27)
    ```
    """
    if not 0 < fraction < 1:
        raise ValueError(
            "The held-out fraction must be in (0, 1), e.g. 0.1. Received: "
            f"holdout_fraction={fraction}. Or pass an evaluation file."
        )
    if num_examples < 2:
        raise ValueError(
            f"Cannot hold out evaluation rows from {num_examples} "
            "example(s): pass an evaluation file, or train on more rows."
        )
    count = min(max(1, round(fraction * num_examples)), num_examples - 1)
    order = np.random.default_rng(seed).permutation(num_examples)
    return np.sort(order[count:]), np.sort(order[:count])


def holdout_record(num_train, num_held_out, fraction, seed, path):
    """What a job logs and `results.json` keeps about its held-out split.

    Args:
        num_train: int. Rows left to train on.
        num_held_out: int. Rows held out for evaluation.
        fraction: float. The `holdout_fraction` asked for.
        seed: int. The split's seed.
        path: str. The training file, for the note.

    Returns:
        A dict `fraction`, `seed`, `num_train`, `num_held_out` and `note`
        (the sentence logged).
    """
    note = (
        f"No eval file: held out {num_held_out} of "
        f"{num_train + num_held_out} examples of {path} for evaluation "
        f"(trained on the other {num_train})."
    )
    logging.info(note)
    return {
        "fraction": fraction,
        "seed": seed,
        "num_train": int(num_train),
        "num_held_out": int(num_held_out),
        "note": note,
    }
