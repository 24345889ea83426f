"""`BertDistiller`: Keras' `Distiller` that reads raw text, as task models.

`keras.distillation.Distiller` trains a student on a weighted sum of its
own loss on the labels (`student_loss_weight`) and of distillation losses
against a frozen teacher (`1 - student_loss_weight`). `BertDistiller` adds
what a keras_bert task model has: raw text in `fit` through the student's
preprocessor (`keras_bert.models.raw_text`), unlabelled texts (the teacher
is then the only signal), the student's own labels (names mapped to ids)
and its `compile("auto")` optimizer (AdamW warmed up and decayed over each
`fit`). It picks the distillation loss that fits the student's outputs
(`distillation_loss_for`). Nothing of it stays in the student.
"""

import inspect

import keras

from keras_bert.distillation import hidden_states
from keras_bert.keras_workarounds import learning_rate_schedule
from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.raw_text import RawTextMethods
from keras_bert.training.gradient_accumulation import accumulating_train_step
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)
from keras_bert.training.warmup_linear_decay import FitWarmupLinearDecay


class SigmoidLogitsDistillation(keras.distillation.DistillationLoss):
    """Logits distillation for multi-label heads (a sigmoid per label).

    Binary cross-entropy between the teacher's `sigmoid(logits / T)` and
    the student's `logits / T`, times `T ** 2` (as Keras'
    `LogitsDistillation` scales its KL divergence).

    Args:
        temperature: float > 0. Defaults to `2.0`.

    Example:
    ```python
    loss = SigmoidLogitsDistillation(temperature=2.0)
    ```
    """

    def __init__(self, temperature=2.0):
        _check_temperature(temperature)
        self.temperature = temperature

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        t = self.temperature
        targets = keras.ops.sigmoid(teacher_outputs / t)
        loss = keras.losses.binary_crossentropy(
            targets, student_outputs / t, from_logits=True
        )
        return keras.ops.mean(loss) * (t**2)

    def get_config(self):
        return {"temperature": self.temperature}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _check_temperature(temperature):
    if isinstance(temperature, bool) or not (
        isinstance(temperature, (int, float)) and temperature > 0
    ):
        raise ValueError(
            "Received an invalid value for argument `temperature`: "
            f"expected a number > 0 (e.g. 2.0). Received: {temperature!r}"
        )


def distillation_loss_for(student, temperature=2.0):
    """The distillation loss that fits `student`'s outputs.

    - softmax logits (`BertClassifier` single-label,
      `BertTokenClassifier`, ...): `keras.distillation.LogitsDistillation`
      (KL divergence at `temperature`, times its square);
    - multi-label logits: `SigmoidLogitsDistillation(temperature)`;
    - a regression score: mean squared error to the teacher's score;
    - `BertTextEmbedder`: cosine similarity to the teacher's embeddings.

    Args:
        student: a keras_bert task model.
        temperature: float > 0. Softens logits. Defaults to `2.0`.

    Example:
    ```python
    loss = distillation_loss_for(student, temperature=2.0)
    ```
    """
    _check_temperature(temperature)
    if getattr(student, "TASK_NAME", None) == "text_embedder":
        return keras.distillation.FeatureDistillation(loss="cosine_similarity")
    label_mode = getattr(student, "label_mode", None)
    kind = type(label_mode).__name__
    if kind == "Regression":
        return keras.distillation.FeatureDistillation(loss="mse")
    if kind == "MultiLabel":
        return SigmoidLogitsDistillation(temperature)
    # A `KLDivergence` instance: Keras 3.15 resolves its default
    # `loss="kl_divergence"` to the bare function, which its softmax
    # branch does not recognise: the KL would then run on raw logits.
    return keras.distillation.LogitsDistillation(
        temperature=temperature, loss=keras.losses.KLDivergence()
    )


# Models sharing the student's or teacher's layers, tensors of one step.
_UNTRACKED = ("_models_with_states", "_student_states", "_teacher_states")


class BertDistiller(RawTextMethods, keras.distillation.Distiller):
    """Distils a keras_bert teacher into a student, on raw text too.

    `keras.distillation.Distiller` with `fit` on raw text (texts, pairs
    `(texts_a, texts_b)` or a `tf.data.Dataset` of text batches), labelled
    or not, tokenized by the student's preprocessor, which the teacher
    must read as well (`keras_bert.distillation.student_of` shares it).
    Without labels only the teacher teaches (the distillation loss,
    scaled by `1 - student_loss_weight`). The trained model is
    `distiller.student`, an ordinary task model. The teacher is frozen
    (`teacher.trainable = False`, as Keras' `Distiller` does).

    Args:
        teacher: a trained keras_bert task model.
        student: a task model of the same outputs (e.g. `student_of`).
        distillation_losses: as Keras' (`LogitsDistillation`,
            `FeatureDistillation`, ...), or `None` (the default):
            `distillation_loss_for(student, temperature)`.
        distillation_loss_weights: as Keras'.
        student_loss_weight: float in [0, 1]. Weight of the student's own
            loss on the labels: `1.0` labels only, `0.0` teacher only.
            Defaults to `0.5`.
        temperature: float > 0. For the default distillation loss.
            Defaults to `2.0`.
        hidden_state_weight: float >= 0. Adds this times the mean squared
            error between each student block's output and its mapped
            teacher block's (padding masked out; the last block of a
            `BertClassifier` at `[CLS]`), from the same forward passes as
            the logits; not scaled by `1 - student_loss_weight`. Both
            must have one hidden width (a `student_of` student). Defaults
            to `0.0`: off.
        hidden_state_layers: the teacher block each student block is
            matched to, or `None` (the default): TinyBERT's uniform map
            (`hidden_states.uniform_layer_map`: 6 blocks to 3 gives
            `(1, 3, 5)`).
        **kwargs: `name`.

    Example:
    ```python
    student = keras_bert.distillation.student_of(teacher, num_layers=3)
    distiller = keras_bert.distillation.BertDistiller(teacher, student)
    distiller.compile()  # the student's AdamW and loss
    distiller.fit(["a good film", "a dull book"], [1, 0], epochs=3)
    distiller.fit(["unlabelled text", "more of it"])  # teacher only
    distiller.student.save("student.keras")
    # Hidden states too: student block j against teacher block (1, 3, 5)[j].
    BertDistiller(teacher, student, hidden_state_weight=1.0)
    ```
    """

    TEXT_METHODS = ("fit",)
    _FIT_NEEDS_LABELS = False

    def __init__(
        self,
        teacher,
        student,
        distillation_losses=None,
        distillation_loss_weights=None,
        student_loss_weight=0.5,
        temperature=2.0,
        hidden_state_weight=0.0,
        hidden_state_layers=None,
        **kwargs,
    ):
        if isinstance(hidden_state_weight, bool) or not (
            isinstance(hidden_state_weight, (int, float))
            and hidden_state_weight >= 0
        ):
            raise ValueError(
                "Received an invalid value for argument "
                "`hidden_state_weight`: expected a number >= 0 (0.0: off, "
                f"e.g. 1.0). Received: {hidden_state_weight!r}"
            )
        vocabularies = [
            backbone_of(model).vocabulary_size for model in (teacher, student)
        ]
        if vocabularies[0] != vocabularies[1]:
            raise ValueError(
                f"The teacher reads {vocabularies[0]} token ids, the "
                f"student {vocabularies[1]}: both must read the ids of one "
                "preprocessor. Build the student with "
                "keras_bert.distillation.student_of(teacher, ...)."
            )
        if distillation_losses is None:
            distillation_losses = distillation_loss_for(student, temperature)
        super().__init__(
            teacher=teacher,
            student=student,
            distillation_losses=distillation_losses,
            distillation_loss_weights=distillation_loss_weights,
            student_loss_weight=student_loss_weight,
            **kwargs,
        )
        self.temperature = temperature
        self.hidden_state_weight = float(hidden_state_weight)
        self.hidden_state_layers = None
        self._student_states = None
        self._teacher_states = None
        if self.hidden_state_weight > 0:
            if self._teacher_feature_extractor is not None:
                raise ValueError(
                    "hidden_state_weight > 0 takes the teacher's features "
                    "itself: pass distillation_losses without layer names "
                    "(e.g. the default), or hidden_state_weight=0.0."
                )
            self.hidden_state_layers = hidden_states.check_layer_map(
                teacher, student, hidden_state_layers
            )
            # Untracked: their weights are the student's and the teacher's.
            self._models_with_states = (
                hidden_states.hidden_state_model(
                    teacher, self.hidden_state_layers
                ),
                hidden_states.hidden_state_model(
                    student, range(backbone_of(student).num_layers)
                ),
            )
            # Keras' Distiller (3.15) calls it for the teacher's logits:
            # the states come from the same call. The student's come from
            # `call`, kept for the `compute_loss` that follows it.
            self._teacher_feature_extractor = self._models_with_states[0]
            self.hidden_state_loss_tracker = keras.metrics.Mean(
                name="hidden_state_loss"
            )
        elif hidden_state_layers is not None:
            raise ValueError(
                f"hidden_state_layers={hidden_state_layers!r} needs "
                "hidden_state_weight > 0 (e.g. 1.0)."
            )

    def __setattr__(self, name, value):
        if name in _UNTRACKED:
            object.__setattr__(self, name, value)  # not tracked by Keras
        else:
            super().__setattr__(name, value)

    def call(self, inputs, training=None, **kwargs):
        """The student's output; in training with hidden-state
        distillation, its block outputs too (kept for `compute_loss`)."""
        if self.hidden_state_weight > 0 and training:
            features = self._models_with_states[1](
                inputs, training=training, **kwargs
            )
            self._student_states = features
            return features[hidden_states.FINAL_OUTPUT]
        return super().call(inputs, training=training, **kwargs)

    def reset_metrics(self):
        super().reset_metrics()
        if self.hidden_state_weight > 0:
            self.hidden_state_loss_tracker.reset_state()

    def _extract_all_teacher_features(self, x):
        features = super()._extract_all_teacher_features(x)
        self._teacher_states = features
        return features

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """Keras' `Distiller` loss, plus `hidden_state_weight` times the
        hidden-state error (`hidden_state_loss` in the logs)."""
        if self.hidden_state_weight == 0:
            return super().compute_loss(x, y, y_pred, sample_weight, training)
        student, self._student_states = self._student_states, None
        if student is None or y_pred is None:  # not from `call` in training
            student = self._models_with_states[1](x, training=training)
            y_pred = student[hidden_states.FINAL_OUTPUT]
        self._teacher_states = None
        loss = super().compute_loss(x, y, y_pred, sample_weight, training)
        teacher, self._teacher_states = self._teacher_states, None
        if teacher is None:  # student_loss_weight == 1: no logits distilled
            teacher = self._extract_all_teacher_features(x)
            self._teacher_states = None
        hidden = hidden_states.hidden_state_loss(
            teacher, student, *self._models_with_states
        )
        self.hidden_state_loss_tracker.update_state(hidden)
        return keras.ops.add(
            loss, keras.ops.multiply(self.hidden_state_weight, hidden)
        )

    @property
    def preprocessor(self):
        """The student's preprocessor: what `fit` tokenizes with."""
        return self.student.preprocessor

    @property
    def _inputs_from_text(self):
        return self.student._inputs_from_text

    def _text_packer(self):
        return self.student._text_packer()

    def _head_labels(self, labels, argument):
        return self.student._head_labels(labels, argument)

    def _note_text_layout(self, x):
        self.student._note_text_layout(x)

    def _check_text_layout(self, x):
        self.student._check_text_layout(x)

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        metrics=None,
        gradient_accumulation_steps=1,
        **kwargs,
    ):
        """Configures distillation.

        Args:
            optimizer: `"auto"`: the student's `auto_optimizer()` (AdamW
                with its task's learning rate, warmed up and decayed over
                each `fit`).
            loss: the student's loss on the labels; `"auto"`: the one the
                student is compiled with (its class's default).
            metrics: as Keras' `Distiller.compile` (on labelled data only).
            gradient_accumulation_steps: int. Runs each batch as this
                many micro-batches (teacher and student), one after the
                other, and updates the student once with their summed
                gradients, as a task model's `compile` does
                (`keras_bert.training.gradient_accumulation`). The
                hidden-state term, a mean over real tokens, is then each
                micro-batch's mean weighted by its examples (as replicas'
                means are averaged): the whole batch's where the texts
                have one length. Defaults to `1` (the batch runs whole).
            **kwargs: passed to `keras.Model.compile`.
        """
        check_gradient_accumulation_steps(gradient_accumulation_steps)
        self.gradient_accumulation_steps = gradient_accumulation_steps
        if optimizer == "auto":
            optimizer = self.student.auto_optimizer()
        if loss == "auto":
            loss = self.student.loss
            if loss is None:
                if self.student_loss_weight > 0:
                    raise ValueError(
                        f"The student ({type(self.student).__name__}) has "
                        "no loss on labels: pass `loss=` to compile, or "
                        "distil with student_loss_weight=0.0."
                    )
                loss = "mse"  # weighted 0: never computed
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def train_step(self, data):
        steps = getattr(self, "gradient_accumulation_steps", 1)
        if steps > 1:
            return accumulating_train_step(self, data, steps)
        return super().train_step(data)

    def fit(self, *args, **kwargs):
        """`keras.Model.fit` on ids or raw text (`RawTextMethods.fit`),
        labels optional. A `FitWarmupLinearDecay` (the `"auto"`
        optimizer's) is laid over the updates of each call."""
        schedule = learning_rate_schedule(getattr(self, "optimizer", None))
        if isinstance(schedule, FitWarmupLinearDecay):
            arguments = inspect.signature(RawTextMethods.fit).bind(
                self, *args, **kwargs
            )
            arguments = dict(arguments.arguments)
            del arguments["self"]
            extra = arguments.pop("kwargs", {})
            callbacks = list(extra.pop("callbacks", None) or [])
            extra["callbacks"] = [*callbacks, schedule.callback()]
            return super().fit(*arguments.pop("args", ()), **arguments, **extra)
        return super().fit(*args, **kwargs)

    def get_config(self):
        return {
            **super().get_config(),
            "temperature": self.temperature,
            "hidden_state_weight": self.hidden_state_weight,
            "hidden_state_layers": self.hidden_state_layers,
        }
