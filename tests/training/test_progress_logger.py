"""ProgressLogger: a line every few steps, with loss and speed."""

import logging

import keras
import numpy as np
import pytest

from keras_bert.training import ProgressLogger


def test_logs_every_few_steps_of_every_epoch(caplog):
    caplog.set_level(logging.INFO, logger="absl")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((50, 3), "float32"), np.zeros((50, 1), "float32")
    logger = ProgressLogger(steps_per_epoch=25, every_steps=10)
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[logger])
    assert [line.split(":")[0] for line in logger.lines] == [
        "epoch 1 step 10/25",
        "epoch 1 step 20/25",
        "epoch 2 step 10/25",
        "epoch 2 step 20/25",
    ]
    for line in logger.lines:
        loss, speed = line.split(": loss ")[1].split(", ")
        assert float(loss) >= 0
        assert float(speed.removesuffix(" steps/s")) > 0
    assert logger.lines[0] in caplog.text


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"steps_per_epoch": 0}, "steps_per_epoch=0"),
        ({"steps_per_epoch": 5, "every_steps": -1}, "every_steps=-1"),
        ({"steps_per_epoch": 5, "every_steps": 2.5}, "every_steps=2.5"),
    ],
)
def test_bad_arguments_name_the_value(arguments, message):
    with pytest.raises(ValueError, match=message):
        ProgressLogger(**arguments)
