"""Export for TensorFlow Serving.

- `export`: `export_saved_model`, a model and its preprocessor as one
  versioned SavedModel (`served_implementation`: the encoder
  implementation it traces); `bfloat16_cpu`: the CPU check of its
  `precision="bfloat16"`.
- `endpoints`: which endpoints each model class serves, one registry
  (`register_endpoints`, `serving_endpoints`, `servable_task_names`).
- `backbone`, `classifier`, `masked_lm`, `multiple_choice`,
  `question_answerer`, `token_classifier`: the endpoints of each keras_bert
  model, raw text in (`signatures`: what they share). The raw-text
  functions of the heads that decode answers, entities and masks are in
  `keras_bert.decoding`, which the models' `predict` and `fill_mask` run
  too.
- `text_predict`: `predict_text`, a served model's `serving_default` run
  in Python.
- `ops`, `rest`: the ops a SavedModel holds; TF Serving's REST API.
"""

from keras_bert.serving.endpoints import register_endpoints
from keras_bert.serving.endpoints import servable_task_names
from keras_bert.serving.endpoints import serving_endpoints
from keras_bert.serving.export import export_saved_model
from keras_bert.serving.ops import TF_SERVING_TEXT_OPS
from keras_bert.serving.ops import saved_model_op_types
from keras_bert.serving.rest import BadRequest
from keras_bert.serving.rest import rest_predict
from keras_bert.serving.text_predict import predict_text

__all__ = [
    "TF_SERVING_TEXT_OPS",
    "export_saved_model",
    "BadRequest",
    "predict_text",
    "register_endpoints",
    "rest_predict",
    "saved_model_op_types",
    "servable_task_names",
    "serving_endpoints",
]
