"""What a fine-tuning job gives the shared runner, `run_fine_tuning`."""


class FineTuningJob:
    """Base class of a fine-tuning job: its data, model, metrics, outputs.

    A job (GLUE, SQuAD, NER, your own) subclasses this in its folder,
    `keras_bert/fine_tuning/<job>/`, and
    `keras_bert.fine_tuning.run_fine_tuning` does the rest: strategy,
    optimizer and schedule, resume after an interruption, evaluation every
    epoch, best-epoch choice, `results.json` and export. Nothing lists the
    jobs: a new job is a new subclass and a recipe that passes it to
    `run_fine_tuning`.

    The runner calls, in this order:

    1. `load_data()`: read the examples (before any model is built, so
       that a missing file fails at once).
    2. `build_model()`, inside the strategy's scope: returns
       `(model, preprocessor)`. The runner compiles the model with BERT's
       AdamW and warmup + linear decay schedule; the model's own
       `compile` defaults give the loss.
    3. `num_train_examples` (after `build_model`, so a task may count
       rows it makes with the preprocessor, e.g. SQuAD's windows), then
       `train_dataset(...)`, once per run.
    4. `evaluate(model)` after every epoch, on whole eval sets.
    5. After training, with the best epoch's weights loaded:
       `write_outputs(model, directory)`, then
       `keras_bert.serving.export_saved_model(serving_model(model),
       preprocessor, export_dir, **export_options())` when an export is
       asked for,
       then `results_extras()`.

    Attributes:
        name: str. The task's name, written as `results.json`'s `"task"`.
        monitor: str. `"<split>/<metric>"`, one of `evaluate`'s results,
            that picks the best epoch, e.g. `"validation/accuracy"`.
        monitor_mode: str. `"max"` (default) if a higher `monitor` is
            better, `"min"` if a lower one is.

    Example:
    ```python
    class Sentiment(keras_bert.fine_tuning.FineTuningJob):
        name = "sentiment"
        monitor = "validation/accuracy"

        def build_model(self):
            self.preprocessor = keras_bert.BertPreprocessor(tokenizer, 64)
            return keras_bert.BertClassifier(backbone, 2), self.preprocessor

        @property
        def num_train_examples(self):
            return len(train_labels)

        def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
            examples = tf.data.Dataset.from_tensor_slices(
                (self.preprocessor(train_texts), train_labels)
            )
            return keras_bert.data.shuffled_epochs(
                examples, batch_size, seed, first_epoch, num_epochs
            )

        def evaluate(self, model):
            logits = model.predict(self.preprocessor(dev_texts), verbose=0)
            accuracy = np.mean(logits.argmax(-1) == dev_labels)
            return {"validation": {"accuracy": float(accuracy)}}

    keras_bert.fine_tuning.run_fine_tuning(Sentiment(), "runs/sentiment")
    ```
    """

    name = None
    monitor = None
    monitor_mode = "max"
    # True when the training batches come in a few fixed shapes (windows of
    # one length): the runner then traces the step once per shape
    # (`keras_bert.training.trace_per_shape`), so the static-shape fused
    # kernels run. Not for batches cut to their longest row: a trace per
    # length costs more than fusion saves (section
    # `recipe_steps` of `benchmarks/RESULTS.md`).
    static_batch_shapes = False

    def load_data(self):
        """Reads the task's examples. Called first; does nothing by default."""

    def build_model(self):
        """Builds the model to fine-tune and its preprocessor.

        Called inside the strategy's scope, after `load_data`.

        Returns:
            `(model, preprocessor)`: a `keras.Model` whose `compile`
            chooses its loss, and what `export_saved_model` exports with
            it (e.g. a `keras_bert.BertPreprocessor`).
        """
        raise NotImplementedError(self._missing("build_model"))

    @property
    def num_train_examples(self):
        """int. Rows of one training epoch (steps = ceil(rows / batch))."""
        raise NotImplementedError(self._missing("num_train_examples"))

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        """The batches of epochs `first_epoch, ..., num_epochs - 1`.

        Epoch `k`'s order must depend on `(seed, k)` alone, so that a run
        resumed at epoch `k` trains on the batches an uninterrupted run
        trains on: `keras_bert.data.shuffled_epochs` does this.

        Args:
            batch_size: int. The global batch size.
            seed: int. The run's seed.
            first_epoch: int. The first epoch to return (0-based; more
                than 0 when a run resumes).
            num_epochs: int. The run's number of epochs.

        Returns:
            A `tf.data.Dataset` of `(inputs, labels)` batches,
            `ceil(num_train_examples / batch_size)` per epoch.
        """
        raise NotImplementedError(self._missing("train_dataset"))

    def evaluate(self, model):
        """Metrics of `model` over every eval split, each split whole.

        Metrics such as F1, Matthews correlation or SQuAD's exact match
        are not means over batches: compute them over all predictions.

        Args:
            model: the model being trained.

        Returns:
            A dict split name → metric name → float (JSON-ready).
        """
        raise NotImplementedError(self._missing("evaluate"))

    def write_outputs(self, model, directory):
        """Writes the task's own files, with the best weights loaded.

        E.g. GLUE's submission files or SQuAD's `predictions.json`.

        Args:
            model: the model, with the best epoch's weights.
            directory: str. Where this process writes (the run's
                `model_dir`, or a worker's temporary directory).

        Returns:
            A dict of fields added to `results.json` (e.g. the paths
            written). Defaults to none.
        """
        return {}

    def export_options(self):
        """Keyword arguments of `keras_bert.serving.export_saved_model`.

        E.g. `{"labels": [...], "pair": True}` for a sentence-pair
        classifier. Defaults to none.
        """
        return {}

    def serving_model(self, model):
        """The model to export: `model` itself by default.

        A task that trains a wrapper (e.g. embeddings' `PairEmbeddingModel`
        around the embedder it trains) returns what serves.
        """
        return model

    def weights_model(self, model):
        """The model whose weights are the run's `best.weights.h5`:
        `model` itself by default.

        A task that trains a wrapper holding more than it keeps (e.g. a
        distiller, whose frozen teacher is not the run's) returns the
        part whose weights the run keeps.
        """
        return model

    def results_extras(self):
        """Task facts added to `results.json`, e.g. eval set sizes."""
        return {}

    def _missing(self, method):
        return (
            f"{type(self).__name__} must implement `{method}` to be "
            "fine-tuned by `run_fine_tuning` (see "
            "keras_bert.fine_tuning.FineTuningJob)."
        )
