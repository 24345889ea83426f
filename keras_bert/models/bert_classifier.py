"""BERT with a classification (or regression) head on `[CLS]`."""

import keras
import tensorflow as tf

from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.initializers import clone_initializer
from keras_bert.models.bert_backbone import BACKBONE_INPUTS
from keras_bert.models.task import Task
from keras_bert.training.optimizers import create_adamw


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(Task):
    """BERT for sentence and sentence-pair classification or regression.

    Dropout and one dense layer on the backbone's `pooled_output`, as in
    the BERT paper's fine-tuning setup; every weight trains. With
    `num_classes=1` the model is a regressor (e.g. STS-B). The backbone's
    last block runs on `[CLS]` only, the one position the head reads
    (`BertBackbone.outputs_at`: the same logits, less work).

    The model is compiled on construction: sparse categorical
    cross-entropy on logits and `accuracy` for classification, mean
    squared error for regression, AdamW with learning rate 2e-5. Call
    `compile()` to change it.

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_classes: int. Number of classes; `1` for regression.
        dropout: float. Dropout on the pooled output. Defaults to `0.1`.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`).

    Outputs: float32 logits (or scores) `(batch_size, num_classes)`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=3)
    features = {
        "token_ids": np.array([[2, 9, 3]] * 4),
        "segment_ids": np.zeros((4, 3), "int32"),
        "padding_mask": np.ones((4, 3), "int32"),
    }
    classifier.fit(features, np.array([0, 1, 2, 1]), epochs=1, verbose=0)
    ```
    """

    CHECKPOINT_HEADS = {"classifier": "classifier."}
    GROUP_DESCRIPTIONS = {"classifier": "classifier head (classifier)"}
    # run_classifier.py's fine-tuned head, stored `(classes, hidden)`.
    GOOGLE_NAMES = {
        "output_weights": "classifier.weight",
        "output_bias": "classifier.bias",
    }
    HUGGINGFACE_ARCHITECTURE = "BertForSequenceClassification"
    TASK_NAME = "classifier"

    def __init__(self, backbone, num_classes, dropout=0.1, **kwargs):
        if not isinstance(num_classes, int) or num_classes <= 0:
            raise ValueError(
                "Received an invalid value for argument `num_classes`, "
                "expected a positive integer (1 for regression). Received: "
                f"num_classes={num_classes!r}"
            )
        if not 0 <= dropout < 1:
            raise ValueError(
                "Received an invalid value for argument `dropout`, expected a "
                f"float in [0, 1). Received: dropout={dropout!r}"
            )

        # === Layers ===
        self.backbone = backbone
        self.output_dropout = HalfBitsDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=clone_initializer(
                keras.initializers.TruncatedNormal(
                    stddev=backbone.initializer_range
                )
            ),
            dtype="float32",  # logits stay float32 under mixed precision
            name="logits",
        )

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in BACKBONE_INPUTS
        }
        # The last block runs on [CLS] only (see BertBackbone.outputs_at).
        pooled = backbone.outputs_at(inputs)["pooled_output"]
        outputs = self.output_dense(self.output_dropout(pooled))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout

        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's fine-tuning setup.

        Args:
            optimizer: `"auto"` for AdamW (2e-5, weight decay 0.01 except
                LayerNorm and biases, global-norm clipping 1.0).
            loss: `"auto"` for cross-entropy on logits, or mean squared
                error when `num_classes == 1`.
            metrics: `"auto"` for accuracy, or mean squared error for
                regression.
            **kwargs: passed to `keras.Model.compile`.
        """
        regression = self.num_classes == 1
        if optimizer == "auto":
            optimizer = create_adamw(learning_rate=2e-5)
        if loss == "auto":
            loss = (
                keras.losses.MeanSquaredError()
                if regression
                else keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                )
            )
        if metrics == "auto":
            metrics = (
                [keras.metrics.MeanSquaredError(name="mse")]
                if regression
                else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
            )
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
        }

    # --- Task interface ----------------------------------------------------

    def head_weights(self):
        return {"classifier": {"classifier": self.output_dense}}

    @classmethod
    def config_from_checkpoint(
        cls, checkpoint, backbone_config, num_classes=None, dropout=None
    ):
        if num_classes is None:
            if "classifier.weight" not in checkpoint.tensors:
                raise ValueError(
                    f"{checkpoint.path} has no classifier head, so the number "
                    "of classes is unknown. Pass it: "
                    "`BertClassifier.from_checkpoint(path, num_classes=...)`."
                )
            num_classes = int(checkpoint.tensors["classifier.weight"].shape[0])
        if dropout is None:
            dropout = backbone_config["dropout"]
        return {"num_classes": num_classes, "dropout": dropout}

    def huggingface_config(self):
        labels = {str(i): f"LABEL_{i}" for i in range(self.num_classes)}
        config = {
            **super().huggingface_config(),
            "id2label": labels,
            "label2id": {label: int(i) for i, label in labels.items()},
            "classifier_dropout": self.dropout,
        }
        if self.num_classes == 1:
            config["problem_type"] = "regression"
        return config

    def serving_endpoints(self, preprocessor, labels=None, pair=False):
        """`serving_default` on text, `predict_ids` on ids.

        Both return `probabilities` float32 `(batch, classes)`, `label_id`
        int32 `(batch,)` and `label` string `(batch,)`; a regressor
        (`num_classes=1`) returns `score` float32 `(batch,)`.

        Args:
            preprocessor: the `keras_bert.BertPreprocessor` the model was
                trained with.
            labels: list of str or `None`. The label of each class.
                Defaults to `"0"`, `"1"`, ...
            pair: bool. Whether the text endpoint takes `text_a` and
                `text_b`.
        """
        from keras_bert.serving.signatures import text_and_ids_endpoints

        if self.num_classes == 1:
            if labels is not None:
                raise ValueError(
                    "A regression model (num_classes=1) has no labels; "
                    f"received labels={labels!r}. Pass labels=None."
                )

            def regression(inputs, text):
                scores = self(inputs, training=False)
                return {"score": tf.cast(scores[:, 0], tf.float32)}

            return text_and_ids_endpoints(
                preprocessor, regression, "predict_ids", pair
            )
        if labels is None:
            labels = [str(i) for i in range(self.num_classes)]
        labels = [str(label) for label in labels]
        if len(labels) != self.num_classes:
            raise ValueError(
                f"The model has {self.num_classes} classes but {len(labels)} "
                f"labels were given ({labels}). Pass one label per class."
            )
        label_table = tf.constant(labels)

        def classification(inputs, text):
            logits = tf.cast(self(inputs, training=False), tf.float32)
            label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {
                "probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": label_id,
                "label": tf.gather(label_table, label_id),
            }

        return text_and_ids_endpoints(
            preprocessor, classification, "predict_ids", pair
        )

    @classmethod
    def from_checkpoint(cls, path, num_classes=None, **kwargs):
        """Builds a classifier on a checkpoint's backbone.

        The backbone is loaded from the checkpoint; the classifier head too
        when the checkpoint has one (`classifier.*`, or `output_weights` in
        a Google fine-tuned checkpoint), otherwise it is freshly
        initialised. See `keras_bert.checkpoints.load_checkpoint`.

        Args:
            path: str. A Hugging Face or Google BERT checkpoint directory.
            num_classes: int. Number of classes; may be omitted when the
                checkpoint has a classifier head.
            **kwargs: `dropout` and overrides of the backbone config.

        Example:
        ```python
        keras_bert.checkpoints.save_huggingface(
            keras_bert.BertBackbone.from_preset("bert_tiny"), None, "tiny_bert"
        )
        classifier = keras_bert.BertClassifier.from_checkpoint(
            "tiny_bert", num_classes=2
        )
        ```
        """
        return super().from_checkpoint(path, num_classes=num_classes, **kwargs)
