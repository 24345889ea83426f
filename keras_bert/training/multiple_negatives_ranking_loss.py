"""The contrastive loss with in-batch negatives of sentence-transformers."""

import keras
from keras import ops

# `torch.nn.functional.normalize`'s floor on the norm, which
# sentence-transformers' `cos_sim` uses: a zero vector stays zero.
_NORM_EPSILON = 1e-12


@keras.saving.register_keras_serializable(package="keras_bert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """Cross-entropy of each anchor against every candidate in the batch.

    sentence-transformers' `MultipleNegativesRankingLoss` (its default
    settings: cosine similarity, the anchor-to-candidate direction only,
    no gathering across devices) as a Keras loss. For a batch of `n`
    anchors, their `n` positives and optionally `k` more columns of hard
    negatives, row `i` of the scores is `scale * cos(anchor_i, c_j)` for
    every candidate `c_j` (all positives first, then each negative
    column), and the loss of example `i` is the cross-entropy of that row
    with label `i`: its own positive against the other examples'
    positives (in-batch negatives) and every negative. Keras averages the
    examples' losses. Batches should hold no text twice (a duplicate is a
    "negative" equal to the positive): see
    `keras_bert.data.no_duplicates_epochs`.

    `y_true` is not used (the right candidate is the diagonal); pass
    anything with one row per example, e.g. zeros.

    Under a `tf.distribute` strategy, Keras computes the loss on each
    replica's own batch: the in-batch negatives of an anchor are the
    candidates on its replica, as sentence-transformers on one device
    with the per-replica batch (its `gather_across_devices=False`, the
    default), and the replicas' mean losses are averaged. With
    gradient accumulation the negatives are those of the micro-batch.

    Args:
        scale: float. The similarities' multiplier (`1 / temperature`).
            Defaults to `20.0`, sentence-transformers'.
        reduction: str. Keras' reduction of the per-example losses.
            Defaults to `"sum_over_batch_size"` (the mean).
        name: str. Defaults to `"multiple_negatives_ranking_loss"`.
        dtype: the dtype the loss is computed in. Defaults to `None`
            (Keras' float type, float32).

    Call arguments:
        y_true: ignored; one row per example.
        y_pred: float tensor `(batch_size, num_columns, hidden_dim)`:
            column 0 the anchors' embeddings, column 1 their positives',
            columns 2 on hard negatives' (`num_columns >= 2`).

    Example:
    ```python
    import numpy as np
    loss = keras_bert.training.MultipleNegativesRankingLoss(scale=20.0)
    anchors_and_positives = np.random.normal(size=(4, 2, 8))  # (4, 2, 8)
    loss(np.zeros(4), anchors_and_positives)  # a scalar
    ```

    References:
        - [Henderson et al., 2017](https://arxiv.org/abs/1705.00652)
        - sentence-transformers'
          `sentence_transformer/losses/multiple_negatives_ranking.py`
    """

    def __init__(
        self,
        scale=20.0,
        reduction="sum_over_batch_size",
        name="multiple_negatives_ranking_loss",
        dtype=None,
    ):
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise ValueError(
                "Received an invalid value for argument `scale`, expected a "
                f"positive number (e.g. 20.0). Received: scale={scale!r}"
            )
        if not scale > 0:
            raise ValueError(
                "Received an invalid value for argument `scale`, expected a "
                "positive number (sentence-transformers uses 20.0). "
                f"Received: scale={scale!r}"
            )
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        del y_true  # The right candidate of row i is column i.
        y_pred = ops.convert_to_tensor(y_pred, dtype=self.dtype)
        if len(y_pred.shape) != 3 or (
            y_pred.shape[1] is not None and y_pred.shape[1] < 2
        ):
            raise ValueError(
                "MultipleNegativesRankingLoss expects `y_pred` of shape "
                "(batch_size, num_columns >= 2, hidden_dim): the anchors', "
                "positives' (and hard negatives') embeddings stacked on "
                f"axis 1. Received: shape={tuple(y_pred.shape)}"
            )
        y_pred = y_pred / ops.maximum(
            ops.norm(y_pred, axis=-1, keepdims=True), _NORM_EPSILON
        )
        anchors = y_pred[:, 0]  # (batch, hidden)
        # Every candidate column after the other, as sentence-transformers
        # concatenates them: positives first, then each negative column.
        candidates = ops.reshape(
            ops.transpose(y_pred[:, 1:], (1, 0, 2)),
            (-1, ops.shape(y_pred)[-1]),
        )  # (columns * batch, hidden)
        scores = self.scale * ops.matmul(
            anchors, ops.transpose(candidates)
        )  # (batch, columns * batch)
        # Row i's positive is candidate i: the main diagonal.
        positive_scores = ops.diagonal(scores)  # (batch,)
        return ops.logsumexp(scores, axis=-1) - positive_scores  # (batch,)

    def get_config(self):
        return {
            **super().get_config(),
            "scale": self.scale,
            "dtype": self.dtype,
        }
