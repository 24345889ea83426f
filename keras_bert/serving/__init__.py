"""Export for TensorFlow Serving."""

from keras_bert.serving.export import export_saved_model
from keras_bert.serving.ops import TF_SERVING_TEXT_OPS
from keras_bert.serving.ops import saved_model_op_types
from keras_bert.serving.rest import BadRequest
from keras_bert.serving.rest import rest_predict

__all__ = [
    "TF_SERVING_TEXT_OPS",
    "export_saved_model",
    "BadRequest",
    "rest_predict",
    "saved_model_op_types",
]
