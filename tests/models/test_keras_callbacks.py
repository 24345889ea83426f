"""Keras' own callbacks work with `fit` of a task model on raw text."""

import os

import keras
import numpy as np

from tests.models.test_raw_text import LABELS
from tests.models.test_raw_text import TEXTS
from tests.models.test_raw_text import classifier


def test_early_stopping_model_checkpoint_and_tensorboard_on_raw_text(
    tmp_path,
):
    model = classifier()
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    # The validation labels are the training labels flipped: the better
    # the model fits, the worse its val_loss, which stops improving at once.
    stopping = keras.callbacks.EarlyStopping(
        "val_loss", patience=1, restore_best_weights=True
    )
    checkpoint = str(tmp_path / "best.weights.h5")
    history = model.fit(
        TEXTS,
        LABELS,
        validation_data=(TEXTS, 1 - LABELS),
        batch_size=3,
        epochs=20,
        callbacks=[
            stopping,
            keras.callbacks.ModelCheckpoint(
                checkpoint, "val_loss", save_best_only=True,
                save_weights_only=True,
            ),
            keras.callbacks.TensorBoard(str(tmp_path / "logs")),
        ],
        verbose=0,
    )  # fmt: skip
    epochs_run = len(history.history["loss"])
    assert 2 <= epochs_run < 20
    assert stopping.stopped_epoch == epochs_run - 1
    assert np.argmin(history.history["val_loss"]) == 0
    assert os.path.exists(checkpoint)
    assert os.listdir(tmp_path / "logs" / "validation")
