"""Export for TensorFlow Serving.

- `export`: `export_saved_model`, a model and its preprocessor as one
  versioned SavedModel (`served_implementation`: the encoder
  implementation it serves).
- `plan`: `plan_export`, how an export runs on this CPU (one immutable
  `ServingPlan`), refusing at export time what the CPU cannot serve;
  `cpu`: what this process's CPU runs (flags, oneDNN).
- `served_copy`: the plan applied to a copy of the model, in one place
  (`serving_copy`, `quantized_copy`, `head_parallel_copy`: such copies
  to call in Python); `int8_calibration`: a calibrated plan's ranges;
  `runtime`: what a served model computes (the blocks' serving
  implementations, the remapper's forms, the streams' layout).
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

from keras_bert.serving.cpu import SERVER_CPUS
from keras_bert.serving.cpu import server_cpu
from keras_bert.serving.endpoints import register_endpoints
from keras_bert.serving.endpoints import servable_task_names
from keras_bert.serving.endpoints import serving_endpoints
from keras_bert.serving.export import export_saved_model
from keras_bert.serving.head_parallel import head_parallel_copy
from keras_bert.serving.ops import TF_SERVING_TEXT_OPS
from keras_bert.serving.ops import saved_model_op_types
from keras_bert.serving.plan import QUANTIZATION_MODES
from keras_bert.serving.plan import ServingPlan
from keras_bert.serving.plan import plan_export
from keras_bert.serving.quantization import quantized_copy
from keras_bert.serving.rest import BadRequest
from keras_bert.serving.rest import rest_predict
from keras_bert.serving.served_copy import served_copy
from keras_bert.serving.served_copy import serving_copy
from keras_bert.serving.text_predict import predict_text

__all__ = [
    "QUANTIZATION_MODES",
    "SERVER_CPUS",
    "ServingPlan",
    "TF_SERVING_TEXT_OPS",
    "export_saved_model",
    "head_parallel_copy",
    "plan_export",
    "quantized_copy",
    "served_copy",
    "serving_copy",
    "BadRequest",
    "predict_text",
    "register_endpoints",
    "rest_predict",
    "saved_model_op_types",
    "servable_task_names",
    "server_cpu",
    "serving_endpoints",
]
