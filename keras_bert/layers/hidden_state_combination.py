"""One feature vector per token from several layers' hidden states."""

import keras
from keras import ops

# Each mode, and how many hidden states (embedding output first) it needs:
# the feature-based rows of the BERT paper's Table 7.
COMBINATIONS = {
    "embeddings": 1,
    "second_to_last": 2,
    "last": 1,
    "sum_last_four": 4,
    "concat_last_four": 4,
    "weighted_sum_all": 1,
}


@keras.saving.register_keras_serializable(package="keras_bert")
class HiddenStateCombination(keras.layers.Layer):
    """Combines a backbone's per-layer hidden states into one per token.

    The feature-based use of BERT (Devlin et al., 2019, section 5.3 and
    Table 7): a frozen encoder's hidden states, the embedding output
    followed by every block's output, are combined into one feature vector
    per token for a task model. The modes:

    | `combination`        | output                                        |
    |----------------------|-----------------------------------------------|
    | `"embeddings"`       | the embedding output (`states[0]`)            |
    | `"second_to_last"`   | the second-to-last block's output             |
    | `"last"`             | the last block's output                       |
    | `"sum_last_four"`    | the sum of the last four blocks' outputs      |
    | `"concat_last_four"` | the last four concatenated, `4 * hidden_dim`  |
    | `"weighted_sum_all"` | `gamma * sum_j softmax(w)_j * states[j]`      |

    `"weighted_sum_all"` is ELMo's scalar mix (Peters et al., 2018): one
    trainable scalar per state (`w`, zeros at first, so the mix starts as
    the mean), normalised by a softmax, and a trainable scale `gamma`
    (starts at 1). Every other mode has no weights.

    Args:
        combination: str. One of the modes above. Defaults to `"last"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`
            (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: a list of `num_states` tensors, each `(batch_size,
            sequence_length, hidden_dim)`: the embedding output, then each
            block's output, in order.

    Returns:
        `(batch_size, sequence_length, hidden_dim)`, or `(batch_size,
        sequence_length, 4 * hidden_dim)` for `"concat_last_four"`.

    Example:
    ```python
    states = [np.full((2, 5, 3), float(i), "float32") for i in range(7)]
    layer = keras_bert.layers.HiddenStateCombination("sum_last_four")
    layer(states)[0, 0]  # [18., 18., 18.]: 3 + 4 + 5 + 6
    keras_bert.layers.HiddenStateCombination("weighted_sum_all")(states)
    # all 3.0 at first: the mean of 0 ... 6
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805), Table 7
        - [Peters et al., 2018](https://arxiv.org/abs/1802.05365), eq. 1
    """

    def __init__(self, combination="last", **kwargs):
        super().__init__(**kwargs)
        if combination not in COMBINATIONS:
            raise ValueError(
                "Received an invalid value for argument `combination`, "
                f"expected one of {list(COMBINATIONS)}. Received: "
                f"combination={combination!r}"
            )
        self.combination = combination

    def build(self, inputs_shape):
        num_states = self._check_num_states(inputs_shape)
        if self.combination == "weighted_sum_all":
            self.layer_weights = self.add_weight(
                name="layer_weights",
                shape=(num_states,),
                initializer="zeros",
            )
            self.gamma = self.add_weight(
                name="gamma", shape=(), initializer="ones"
            )
        self.built = True

    def _check_num_states(self, inputs_shape):
        if not isinstance(inputs_shape, (list, tuple)) or not all(
            isinstance(shape, (list, tuple)) for shape in inputs_shape
        ):
            raise ValueError(
                "HiddenStateCombination takes a list of hidden states, each "
                "(batch_size, sequence_length, hidden_dim). Received inputs "
                f"of shape {inputs_shape}"
            )
        needed = COMBINATIONS[self.combination]
        if len(inputs_shape) < needed:
            raise ValueError(
                f"combination={self.combination!r} needs at least {needed} "
                f"hidden states; received {len(inputs_shape)}. Pass the "
                "embedding output and every block's output."
            )
        return len(inputs_shape)

    def call(self, inputs):
        states = list(inputs)
        if self.combination == "embeddings":
            return states[0]
        if self.combination == "second_to_last":
            return states[-2]
        if self.combination == "last":
            return states[-1]
        if self.combination == "sum_last_four":
            return states[-4] + states[-3] + states[-2] + states[-1]
        if self.combination == "concat_last_four":
            return ops.concatenate(states[-4:], axis=-1)
        # weighted_sum_all: softmax in float32, the mix in the compute dtype.
        weights = ops.cast(ops.softmax(self.layer_weights), self.compute_dtype)
        mixed = ops.sum(
            ops.stack(states, axis=-1) * weights, axis=-1
        )  # (batch, seq, hidden)
        return ops.cast(self.gamma, self.compute_dtype) * mixed

    @property
    def normalized_layer_weights(self):
        """The softmax of `layer_weights` (`"weighted_sum_all"` only)."""
        if self.combination != "weighted_sum_all":
            raise ValueError(
                f"combination={self.combination!r} has no layer weights; "
                "only combination='weighted_sum_all' learns them."
            )
        return ops.softmax(self.layer_weights)

    def compute_output_shape(self, inputs_shape):
        self._check_num_states(inputs_shape)
        shape = tuple(inputs_shape[-1])
        if self.combination == "concat_last_four":
            hidden = None if shape[-1] is None else 4 * shape[-1]
            return shape[:-1] + (hidden,)
        return shape

    def get_config(self):
        config = super().get_config()
        config.update({"combination": self.combination})
        return config
