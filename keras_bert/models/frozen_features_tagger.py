"""A BiLSTM tagger on a frozen BERT's hidden states (feature-based NER)."""

import keras
from keras import ops

from keras_bert.layers.hidden_state_combination import COMBINATIONS
from keras_bert.layers.hidden_state_combination import HiddenStateCombination
from keras_bert.models import BertBackbone
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.bert_token_classifier import tagging_loss_and_metrics
from keras_bert.models.task import logits_dense
from keras_bert.training.optimizers import training_defaults
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate

# What each `features` value feeds the tagger (`recipes/ner.py --features`).
FEATURES = {
    "embeddings": "the embedding output (no transformer block)",
    "second_to_last": "the second-to-last block's output",
    "last": "the last block's output",
    "sum_last_four": "the sum of the last four blocks' outputs",
    "concat_last_four": "the last four blocks' outputs concatenated",
    "weighted_sum_all": (
        "a learned softmax-weighted sum of the embedding output and every "
        "block's output, times a learned scale (ELMo's scalar mix)"
    ),
}
assert set(FEATURES) == set(COMBINATIONS)


@keras.saving.register_keras_serializable(package="keras_bert")
class FrozenFeaturesTagger(keras.Model):
    """A BiLSTM tagger on a frozen BERT's hidden states (the paper's 5.3).

    The feature-based approach of Devlin et al. (2019), Table 7: BERT is
    not fine-tuned; its hidden states (the embedding output and every
    block's output) are combined into one vector per token
    (`keras_bert.layers.HiddenStateCombination`, chosen by `features`),
    and only a tagger on top trains: dropout, `num_lstm_layers`
    bidirectional LSTMs (the paper's "two-layer 768-dimensional BiLSTM"),
    dropout, and a dense layer giving each token a logit per class. Words
    are labelled on their first sub-token, as `BertTokenClassifier`'s are,
    so `NerFineTuning` trains and scores either.

    The backbone is frozen (`backbone.trainable = False`, set here) and
    runs in inference mode (no dropout) in `fit` too, so its features are fixed
    for each input: only the combination's weights (with
    `"weighted_sum_all"`), the LSTMs and the output layer train.

    The model is compiled on construction: cross-entropy on logits over the
    labelled positions (label `-100` left out), `accuracy` over the same
    positions, AdamW at `keras_bert.training.TRAINING_DEFAULTS[
    "frozen_features_tagging"]`'s learning rate (1e-3: the tagger starts
    from random weights). Call `compile()` to change it.

    Args:
        backbone: `keras_bert.BertBackbone`. Frozen by this model.
        num_classes: int. Number of tags.
        features: str. Which hidden states feed the tagger: `"embeddings"`,
            `"second_to_last"`, `"last"`, `"sum_last_four"`,
            `"concat_last_four"` or `"weighted_sum_all"` (see `FEATURES`).
            Defaults to `"last"`.
        lstm_units: int or `None`. Units of each LSTM direction; `None`
            takes `backbone.hidden_dim // 2`, so that each BiLSTM's output
            is `hidden_dim` wide (768 for BERT-base, as the paper's).
        num_lstm_layers: int. Stacked BiLSTMs. Defaults to `2`.
        dropout: float. Dropout on the features and on each BiLSTM's
            output. Defaults to `0.1`.
        labels: list of str or `None`. The name of each class, saved with
            the model.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`), int32 `(batch_size, sequence_length)`.

    Outputs: float32 logits `(batch_size, sequence_length, num_classes)`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    model = keras_bert.models.FrozenFeaturesTagger(
        backbone, num_classes=3, features="weighted_sum_all", lstm_units=4
    )
    features = {  # [CLS] w w w [SEP]
        "token_ids": np.array([[2, 9, 8, 7, 3]] * 4),
        "segment_ids": np.zeros((4, 5), "int32"),
        "padding_mask": np.ones((4, 5), "int32"),
    }
    labels = np.array([[-100, 1, 2, 0, -100]] * 4)
    model.fit(features, labels, epochs=1, verbose=0)
    model.predict(features, verbose=0).shape  # (4, 5, 3)
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805), 5.3,
          Table 7
    """

    TASK_NAME = "frozen_features_tagging"

    def __init__(
        self,
        backbone,
        num_classes,
        features="last",
        lstm_units=None,
        num_lstm_layers=2,
        dropout=0.1,
        labels=None,
        **kwargs,
    ):
        check_positive_int(
            "num_classes", num_classes, hint="the number of tags"
        )
        if features not in FEATURES:
            raise ValueError(
                "Received an invalid value for argument `features`, "
                f"expected one of {list(FEATURES)}. Received: "
                f"features={features!r}"
            )
        if lstm_units is not None:
            check_positive_int("lstm_units", lstm_units)
        check_positive_int("num_lstm_layers", num_lstm_layers)
        check_rate("dropout", dropout)
        if labels is not None:
            labels = [str(label) for label in labels]
            if len(labels) != num_classes or len(set(labels)) != num_classes:
                raise ValueError(
                    f"Expected {num_classes} distinct labels, one per class. "
                    f"Received: labels={labels!r}. Pass one name per class, "
                    "or labels=None."
                )
        units = lstm_units or max(1, backbone.hidden_dim // 2)

        # === Layers ===
        self.backbone = backbone
        backbone.trainable = False
        self.hidden_states = _FrozenHiddenStates(
            backbone, name="frozen_hidden_states"
        )
        self.combination = HiddenStateCombination(features, name="features")
        self.feature_dropout = keras.layers.Dropout(
            dropout, name="feature_dropout"
        )
        self.lstm_layers = [
            keras.layers.Bidirectional(
                keras.layers.LSTM(units, return_sequences=True),
                name=f"bilstm_{i}",
            )
            for i in range(num_lstm_layers)
        ]
        self.lstm_dropouts = [
            keras.layers.Dropout(dropout, name=f"bilstm_{i}_dropout")
            for i in range(num_lstm_layers)
        ]
        # As BertTokenClassifier's head: normal, std initializer_range.
        self.output_dense = logits_dense(
            num_classes,
            backbone,
            name="logits",
            initializer=keras.initializers.RandomNormal,
        )

        # === Functional Model ===
        inputs = keras_inputs()
        states = self.hidden_states(inputs)
        x = self.feature_dropout(self.combination(states))
        mask = ops.cast(inputs["padding_mask"], "bool")
        for lstm, lstm_dropout in zip(self.lstm_layers, self.lstm_dropouts):
            x = lstm_dropout(lstm(x, mask=mask))
        # The LSTMs pass their mask on; Keras would weight the loss by it
        # (the labels' -100 already leave padding out): dropped here.
        outputs = self.output_dense(_WithoutMask(name="without_mask")(x))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.features = features
        self.lstm_units = lstm_units
        self.num_lstm_layers = num_lstm_layers
        self.dropout = dropout
        self.labels = labels

        self.compile()

    @classmethod
    def from_checkpoint(cls, path, preprocessor=None, **kwargs):
        """The tagger on a pre-trained backbone (from `path`).

        Args:
            path: str. What `BertBackbone.from_checkpoint` takes.
            preprocessor: must be `None`: this model takes ids only.
            **kwargs: this class's arguments (`num_classes`, `features`,
                ...).
        """
        if preprocessor is not None:
            raise ValueError(
                f"{cls.__name__} takes ids only; pass preprocessor=None. "
                f"Received: preprocessor={preprocessor!r}"
            )
        return cls(BertBackbone.from_checkpoint(path), **kwargs)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives the tagger's defaults.

        Args:
            optimizer: `"auto"` for AdamW with `keras_bert.training.
                TRAINING_DEFAULTS["frozen_features_tagging"]` (1e-3).
            loss: `"auto"` for cross-entropy on logits over the positions
                whose label is not `-100`, averaged over the global batch.
            metrics: `"auto"` for the accuracy over the same positions.
            **kwargs: passed to `keras.Model.compile`.
        """
        if optimizer == "auto":
            optimizer = training_defaults(self.TASK_NAME).create_optimizer()
        loss, metrics = tagging_loss_and_metrics(loss, metrics)
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def compile_from_config(self, config):
        # A loaded `.keras` file gets its compile settings (and optimizer
        # state) back, as keras_bert's task models do.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.layers.serialize(self.backbone),
            "num_classes": self.num_classes,
            "features": self.features,
            "lstm_units": self.lstm_units,
            "num_lstm_layers": self.num_lstm_layers,
            "dropout": self.dropout,
            "labels": self.labels,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.layers.deserialize(config["backbone"])
        return cls(**config)


class _WithoutMask(keras.layers.Layer):
    """Its input, without the Keras mask that came with it."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        # A new tensor: the input tensor itself carries the mask.
        return ops.copy(inputs)

    def compute_mask(self, inputs, mask=None):
        return None


class _FrozenHiddenStates(keras.layers.Layer):
    """The backbone's hidden states, always in inference mode.

    `BertBackbone.layer_outputs` in a model of its own, called with
    `training=False`: a functional model's `training=True` would otherwise
    reach the backbone's dropout (Keras passes the outer call's `training`
    to every layer of a functional graph, over what the graph was built
    with), and the features would change from call to call. Not
    serialised: the tagger rebuilds it from its backbone.
    """

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        inputs = keras_inputs()
        self.extractor = keras.Model(
            inputs,
            backbone.layer_outputs(inputs)["hidden_states"],
            name="hidden_states",
        )

    def call(self, inputs):
        # A list of num_layers + 1 tensors (batch, seq, hidden).
        return self.extractor(inputs, training=False)

    def compute_output_spec(self, inputs):
        # One KerasTensor per state: a list of one object repeated would
        # make a functional graph feed the same state in every place.
        shape = inputs["token_ids"].shape + (self.backbone.hidden_dim,)
        dtype = self.backbone.dtype_policy.compute_dtype
        return [
            keras.KerasTensor(shape, dtype=dtype)
            for _ in range(self.backbone.num_layers + 1)
        ]
