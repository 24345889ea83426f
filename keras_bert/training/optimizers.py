"""BERT's optimizers: AdamW (and LAMB) without decay on LayerNorm or biases.

`TRAINING_DEFAULTS` is the one place the training defaults live: each
task model's `compile(optimizer="auto")`, `run_fine_tuning` and the
recipes' flag defaults read their learning rate, weight decay, AdamW
constants, clipping, warmup, batch size and epochs from it.
"""

import dataclasses

import keras

from keras_bert.keras_workarounds import require_keras_internals
from keras_bert.training.warmup_linear_decay import FitWarmupLinearDecay

# Variable names that get no weight decay: LayerNorm scale and offset, and
# every bias. Keras matches these against `variable.name`.
NO_DECAY_NAMES = ("gamma", "beta", "bias")

OPTIMIZERS = ("adamw", "lamb")


@dataclasses.dataclass(frozen=True)
class TrainingDefaults:
    """BERT's training defaults for one kind of model.

    The values of Devlin et al. (2019) and Google's `run_classifier.py`,
    `run_squad.py` and `run_pretraining.py`: AdamW with weight decay 0.01
    on every weight but LayerNorm scales/offsets and biases, betas 0.9 and
    0.999, epsilon 1e-6, gradients clipped to global norm 1.0, and a
    learning rate that warms up linearly over the first tenth of the steps
    and then decays linearly to 0. Only the learning rate, and a recipe's
    batch size and epochs, differ between tasks (`TRAINING_DEFAULTS`).
    With LoRA on, `compile(optimizer="auto")` peaks at
    `lora_learning_rate` instead: the few LoRA weights want a rate 10-50x
    full fine-tuning's (docs/fine_tuning.md, "LoRA": SST-2 in one epoch
    scored best at 1e-3 of the rates tried).

    Attributes:
        learning_rate: float. Peak learning rate.
        epochs: int. Fine-tuning epochs (the recipes' `--epochs`).
        batch_size: int. Global training batch size (`--batch_size`).
        warmup_fraction: float. Share of the update steps spent warming up.
        lora_learning_rate: float. Peak learning rate of `compile(
            optimizer="auto")` when the backbone has LoRA on.
        weight_decay: float. Decoupled weight decay.
        no_decay_names: tuple of str. Variable names without decay.
        beta_1, beta_2, epsilon: Adam's constants.
        global_clipnorm: float. Global gradient-norm clipping.

    Example:
    ```python
    defaults = keras_bert.training.TRAINING_DEFAULTS["classifier"]
    defaults.learning_rate  # 2e-05
    optimizer = defaults.create_optimizer()
    ```
    """

    learning_rate: float
    epochs: int = 3
    batch_size: int = 32
    warmup_fraction: float = 0.1
    lora_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    no_decay_names: tuple = NO_DECAY_NAMES
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    global_clipnorm: float = 1.0

    def create_optimizer(self, learning_rate=None, epsilon_hat=True):
        """AdamW with these defaults (see `create_adamw`).

        Args:
            learning_rate: float, schedule or `None` (this default's
                `learning_rate`).
            epsilon_hat: bool. See `AdamW`. Defaults to `True`.
        """
        return create_adamw(
            self.learning_rate if learning_rate is None else learning_rate,
            weight_decay=self.weight_decay,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            global_clipnorm=self.global_clipnorm,
            epsilon_hat=epsilon_hat,
            no_decay_names=self.no_decay_names,
        )

    def create_auto_optimizer(self):
        """What a task model's `compile(optimizer="auto")` trains with:
        `create_optimizer` with a `FitWarmupLinearDecay` at this
        `learning_rate` (`lora_learning_rate` with LoRA on) and
        `warmup_fraction`, which each `fit` lays over its own updates.

        Example:
        ```python
        defaults = keras_bert.training.TRAINING_DEFAULTS["classifier"]
        optimizer = defaults.create_auto_optimizer()
        ```
        """
        return self.create_optimizer(
            FitWarmupLinearDecay(
                self.learning_rate,
                warmup_fraction=self.warmup_fraction,
                lora_learning_rate=self.lora_learning_rate,
            )
        )


# Keyed by the task models' `TASK_NAME`; `"fine_tuning"` is the default of
# `run_fine_tuning` for a head without its own.
TRAINING_DEFAULTS = {
    "fine_tuning": TrainingDefaults(learning_rate=2e-5),
    "classifier": TrainingDefaults(learning_rate=2e-5),
    "question_answering": TrainingDefaults(learning_rate=5e-5, epochs=2),
    "token_classification": TrainingDefaults(learning_rate=5e-5),
    "masked_lm": TrainingDefaults(learning_rate=1e-4),
    # The BERT paper's SWAG setup (section 4.4): 2e-5, batches of 16.
    "multiple_choice": TrainingDefaults(learning_rate=2e-5, batch_size=16),
    # A tagger trained from scratch on a frozen BERT's features
    # (keras_bert.models.FrozenFeaturesTagger): an LSTM's usual rate.
    "frozen_features_tagging": TrainingDefaults(learning_rate=1e-3),
}


def training_defaults(task_name):
    """The `TrainingDefaults` of a task model's `TASK_NAME` (or of
    `"fine_tuning"` for a name without its own)."""
    return TRAINING_DEFAULTS.get(task_name, TRAINING_DEFAULTS["fine_tuning"])


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with each variable's Adam step fused.

    The same optimizer, arguments and math as Keras' `AdamW` (decoupled
    weight decay `w -= lr * decay * w`, then the Adam step `w -= lr_t * m /
    (sqrt(v) + epsilon)`). On the TensorFlow backend the Adam step of each
    variable (the `m`, `v` and weight updates) runs as one fused kernel,
    `ResourceApplyAdam`, instead of about a dozen element-wise ops that each
    read and write the whole tensor. This matters on CPUs, where the optimizer
    update is memory-bound (row `keras_adamw` of `benchmarks/RESULTS.md`,
    "Ablation: what each optimisation is worth").
    Other backends, and `amsgrad=True`, use Keras' own update.

    A sparse gradient (an embedding's `IndexedSlices`) is applied as its
    dense sum, so a row looked up twice in a batch gets the square of its
    summed gradient in `v`, as dense Adam defines it. (Keras' own AdamW
    squares each slice before summing, which gives such rows a different
    `v`.)

    `epsilon` is, as in Keras and TensorFlow, Kingma and Ba's "epsilon hat",
    added to `sqrt(v)` before the bias correction: step `t` divides by
    `sqrt(v_hat) + epsilon / sqrt(1 - beta_2**t)`, an epsilon 31.6x larger at
    the first step (with `beta_2=0.999`) and 3.2x at the 100th. PyTorch's and
    Hugging Face's AdamW add it after the bias correction (the epsilon of the
    paper's Algorithm 1): `epsilon_hat=False` does that. It matters when
    gradients are small next to epsilon, as after clipping a BERT's gradient to
    global norm 1: with `epsilon_hat=False`, fine-tuning follows
    `torch.optim.AdamW` step for step, and by default its early losses drift
    apart (docs/fine_tuning.md, "The optimizer, and matching PyTorch step
    for step"; the same check on a tiny model in
    `tests/training/test_adamw_torch_parity.py`).

    Args: those of `keras.optimizers.AdamW`, and
        epsilon_hat: bool. Whether `epsilon` is Keras' epsilon hat (the
            default) or, when `False`, PyTorch's, added to the
            bias-corrected `sqrt(v_hat)`. `False` needs `amsgrad=False`.

    Example:
    ```python
    optimizer = keras_bert.training.AdamW(1e-4, weight_decay=0.01)
    # The update of torch.optim.AdamW(lr=1e-4, eps=1e-6, weight_decay=0.01):
    optimizer = keras_bert.training.AdamW(
        1e-4, weight_decay=0.01, epsilon=1e-6, epsilon_hat=False
    )
    ```
    """

    def __init__(self, *args, epsilon_hat=True, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(epsilon_hat, bool):
            raise ValueError(
                "Received an invalid value for argument `epsilon_hat`, "
                f"expected True or False. Received: epsilon_hat={epsilon_hat!r}"
            )
        if not epsilon_hat and (
            self.amsgrad or keras.backend.backend() != "tensorflow"
        ):
            raise ValueError(
                "epsilon_hat=False (PyTorch's epsilon) is implemented for "
                "the TensorFlow backend without amsgrad. Received: "
                f"amsgrad={self.amsgrad}, backend "
                f"{keras.backend.backend()!r}. Use epsilon_hat=True."
            )
        self.epsilon_hat = epsilon_hat
        require_keras_internals(
            self,
            [
                "_get_variable_index",
                "_clip_gradients",
            ],
        )
        # The step counter (and a fixed rate's variable): all that an
        # optimizer holds before it is built.
        self._unbuilt_variables = len(self.variables)

    def build(self, variables):
        super().build(variables)
        require_keras_internals(self, ["_momentums", "_velocities"])

    def get_config(self):
        return {**super().get_config(), "epsilon_hat": self.epsilon_hat}

    def load_own_variables(self, store):
        """Keras' `load_own_variables`, and the state of an optimizer that
        was saved before it was built.

        A file of a model compiled but not trained holds the optimizer as
        it was before its first update: its step counter (and a fixed
        rate's variable) only. A task model's `compile_from_config` builds
        the optimizer it loads into, and `compile(optimizer="auto")` has a
        schedule where files of earlier versions have a fixed rate: Keras
        would skip the saved state with a warning about the mismatch. Here
        the step counter loads (and the fixed rate, into a fixed rate), and
        the moments stay zero, as they were when it was saved. A trained
        optimizer's state with a fixed rate loads into one with a schedule
        whole, less the rate (a model trained by an earlier version's
        `compile("auto")`, reloaded to train on).
        """
        saved = len(store.keys())
        # The step counter, then a fixed rate's variable.
        unbuilt = 0 < saved <= 2 and saved != len(self.variables)
        if unbuilt:
            self.iterations.assign(store["0"])
            if saved == 2 == self._unbuilt_variables:
                self.variables[1].assign(store["1"])
            return
        if self._holds_a_fixed_rate_more(store):
            # A trained optimizer with a fixed rate, loaded into one with a
            # schedule: the same state, less the rate.
            self.iterations.assign(store["0"])
            for index, variable in enumerate(self.variables[1:], start=2):
                variable.assign(store[str(index)])
            return
        super().load_own_variables(store)

    def _holds_a_fixed_rate_more(self, store):
        """Whether `store` is this optimizer's state (built) with a fixed
        rate's variable second, where this optimizer has a schedule."""
        if self._unbuilt_variables != 1 or len(self.variables) < 2:
            return False
        if len(store.keys()) != len(self.variables) + 1:
            return False
        rest = [tuple(store[str(i)].shape) for i in range(2, len(store.keys()))]
        return tuple(store["1"].shape) == () and rest == [
            tuple(variable.shape) for variable in self.variables[1:]
        ]

    def _clip_gradients(self, grads):
        """`global_clipnorm` by the norm of the gradient itself.

        Keras squares a sparse gradient's slices before summing them, so a
        row looked up twice in a batch (an embedding row of a repeated
        token, `[CLS]`, `[SEP]`) adds `|a|^2 + |b|^2` to the global norm
        instead of its gradient's `|a + b|^2`: a norm that depends on how
        the lookup was written, and clipping unlike PyTorch's
        `clip_grad_norm_` or Keras' own on the same gradient written dense.
        Here the slices of each row are summed first. Dense gradients are
        clipped with Keras' own ops, unchanged.
        """
        if (
            keras.backend.backend() != "tensorflow"
            or not self.global_clipnorm
            or self.global_clipnorm <= 0
        ):
            return super()._clip_gradients(grads)
        import tensorflow as tf

        squared_norms = []
        for gradient in grads:
            if gradient is None:
                continue
            if isinstance(gradient, tf.IndexedSlices):
                distinct, rows = tf.unique(gradient.indices, out_idx=tf.int32)
                summed = tf.math.unsorted_segment_sum(
                    gradient.values, rows, tf.size(distinct)
                )
                squared_norms.append(keras.ops.sum(keras.ops.square(summed)))
            else:
                squared_norms.append(keras.ops.sum(keras.ops.square(gradient)))
        if not squared_norms:
            return grads
        norm = keras.ops.sqrt(keras.ops.sum(keras.ops.stack(squared_norms)))
        clip_norm = self.global_clipnorm
        # As Keras' clip_by_global_norm: NaN when the norm is not finite.
        scale = clip_norm * keras.ops.minimum(1.0 / norm, 1.0 / clip_norm)
        scale = scale + (norm - norm)

        def scaled(gradient):
            if gradient is None:
                return None
            if isinstance(gradient, tf.IndexedSlices):
                return tf.IndexedSlices(
                    gradient.values * tf.cast(scale, gradient.values.dtype),
                    gradient.indices,
                    gradient.dense_shape,
                )
            return gradient * tf.cast(scale, gradient.dtype)

        return [scaled(gradient) for gradient in grads]

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() != "tensorflow" or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        dtype = variable.dtype
        # A sparse gradient (from an embedding lookup) updates every row,
        # as in Keras' AdamW: the moments of untouched rows still decay.
        gradient = tf.cast(tf.convert_to_tensor(gradient), dtype)
        local_step = tf.cast(self.iterations + 1, dtype)
        index = self._get_variable_index(variable)
        m = self._momentums[index]
        v = self._velocities[index]
        beta_1_power = tf.pow(tf.cast(self.beta_1, dtype), local_step)
        beta_2_power = tf.pow(tf.cast(self.beta_2, dtype), local_step)
        epsilon = tf.cast(self.epsilon, dtype)
        if not self.epsilon_hat:
            # sqrt(v) + eps * sqrt(1 - beta_2^t), times the bias
            # correction sqrt(1 - beta_2^t) / (1 - beta_1^t) in the rate,
            # is PyTorch's sqrt(v_hat) + eps.
            epsilon = epsilon * tf.sqrt(1 - beta_2_power)
        tf.raw_ops.ResourceApplyAdam(
            var=_tf_variable(variable).handle,
            m=_tf_variable(m).handle,
            v=_tf_variable(v).handle,
            beta1_power=beta_1_power,
            beta2_power=beta_2_power,
            lr=tf.cast(learning_rate, dtype),
            beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype),
            epsilon=epsilon,
            grad=gradient,
            use_locking=False,
            use_nesterov=False,
        )


def _tf_variable(variable):
    """The `tf.Variable` of a Keras or TensorFlow variable."""
    return variable.value if isinstance(variable, keras.Variable) else variable


def create_adamw(
    learning_rate=TRAINING_DEFAULTS["masked_lm"].learning_rate,
    weight_decay=TRAINING_DEFAULTS["masked_lm"].weight_decay,
    beta_1=TRAINING_DEFAULTS["masked_lm"].beta_1,
    beta_2=TRAINING_DEFAULTS["masked_lm"].beta_2,
    epsilon=TRAINING_DEFAULTS["masked_lm"].epsilon,
    global_clipnorm=TRAINING_DEFAULTS["masked_lm"].global_clipnorm,
    epsilon_hat=True,
    no_decay_names=NO_DECAY_NAMES,
):
    """AdamW as BERT uses it.

    Weight decay is applied to every weight except LayerNorm scales/offsets
    and biases; gradients are clipped to a global norm. The defaults are
    `TRAINING_DEFAULTS["masked_lm"]`'s (pre-training's learning rate).
    For gradient accumulation see `keras_bert.models.Task.compile`.

    Args:
        learning_rate: float or a `keras.optimizers.schedules` schedule
            in update steps, e.g. `keras_bert.training.WarmupLinearDecay`.
            Defaults to `1e-4`.
        weight_decay: float. Defaults to `0.01`.
        beta_1, beta_2, epsilon: Adam's constants (BERT: 0.9, 0.999, 1e-6).
        global_clipnorm: float or `None`. Defaults to `1.0`.
        epsilon_hat: bool. `False` adds `epsilon` as PyTorch's AdamW does
            (see `AdamW`). Defaults to `True`, Keras' epsilon hat.
        no_decay_names: tuple of str. Variable names without weight decay.
            Defaults to `NO_DECAY_NAMES` (LayerNorm and biases).

    Example:
    ```python
    optimizer = keras_bert.training.create_adamw(2e-5)
    ```
    """
    optimizer = AdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
        epsilon_hat=epsilon_hat,
    )
    optimizer.exclude_from_weight_decay(var_names=list(no_decay_names))
    return optimizer


def create_lamb(
    learning_rate=1e-3,
    weight_decay=TRAINING_DEFAULTS["masked_lm"].weight_decay,
    beta_1=TRAINING_DEFAULTS["masked_lm"].beta_1,
    beta_2=TRAINING_DEFAULTS["masked_lm"].beta_2,
    epsilon=TRAINING_DEFAULTS["masked_lm"].epsilon,
    global_clipnorm=TRAINING_DEFAULTS["masked_lm"].global_clipnorm,
):
    """LAMB (You et al., 2020), the layer-wise adaptive optimizer for large
    batches, with the same decay exclusions and clipping as `create_adamw`.

    Keras' `Lamb` applies decoupled weight decay (`w -= lr * decay * w`)
    next to the trust-ratio-scaled Adam step.

    Args:
        learning_rate: float or schedule. Defaults to `1e-3`.
        weight_decay: float. Defaults to `0.01`.
        beta_1, beta_2, epsilon: Adam's constants.
        global_clipnorm: float or `None`. Defaults to `1.0`.

    Example:
    ```python
    optimizer = keras_bert.training.create_lamb(1e-3)
    ```

    References:
        - [You et al., 2020](https://arxiv.org/abs/1904.00962)
    """
    optimizer = keras.optimizers.Lamb(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer


def create_optimizer(name, learning_rate, **kwargs):
    """Builds an optimizer by name, as a recipe's `--optimizer` flag names it.

    Args:
        name: str. `"adamw"` or `"lamb"`.
        learning_rate: float or schedule.
        **kwargs: passed to `create_adamw` or `create_lamb`.

    Example:
    ```python
    optimizer = keras_bert.training.create_optimizer("lamb", 1e-3)
    ```
    """
    if name == "adamw":
        return create_adamw(learning_rate, **kwargs)
    if name == "lamb":
        return create_lamb(learning_rate, **kwargs)
    raise ValueError(
        "Received an invalid value for argument `name`, expected one of "
        f"{OPTIMIZERS}. Received: name={name!r}"
    )
