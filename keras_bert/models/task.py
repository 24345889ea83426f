"""What BERT's task models share: a serialised backbone and reloadable
compile settings."""

import keras


class Task(keras.Model):
    """Base of the models that put a head on a `BertBackbone`.

    Subclasses build a functional model in `__init__` and override
    `compile` with task defaults. This class serialises the
    backbone with the model and restores the compile settings (optimizer
    state included) when a saved `.keras` file is loaded.
    """

    def compile_from_config(self, config):
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.layers.serialize(self.backbone),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.layers.deserialize(config["backbone"])
        return cls(**config)
