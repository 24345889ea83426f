"""Which SavedModel endpoints each model class serves: one registry.

`export_saved_model` asks `serving_endpoints(model, preprocessor,
**options)`, which calls the builder registered for the model's class, or
for the nearest base class that has one (so a subclass of `BertClassifier`
serves as a classifier). keras_bert's own models are registered below; a
new head registers its builder once:

```python
from keras_bert.decoding import trim_to_longest_row

def scorer_endpoints(model, preprocessor):
    def serve(text):
        inputs = trim_to_longest_row(preprocessor(text))
        return {"score": model(inputs)[:, 0]}

    return {
        "serving_default": (
            serve, [tf.TensorSpec([None], tf.string, name="text")]
        )
    }

keras_bert.serving.register_endpoints(MyScorer, scorer_endpoints)
```

A builder takes the model, its `keras_bert.BertPreprocessor` and the
export's options as keyword arguments, and returns a dict from endpoint
name to `(function, input_signature)`; `serving_default` takes raw
strings.

Trimming: a raw-text endpoint runs its model only up to the request's
longest row, never on the export's whole `sequence_length`
(`benchmarks/serving_ops.py`). Padding is masked, so the outputs are
the same (tests/serving/test_trim.py). A builder gets this by building on
`keras_bert.serving.signatures.text_and_ids_endpoints(preprocessor,
outputs_fn, ids_name)`, whose text endpoint gives `outputs_fn` the trimmed
inputs (the classifier, regressor, backbone and masked-LM builders do). A
builder that packs its own inputs (windows of long texts, as question
answering and token classification do in `keras_bert.decoding`) cuts them
itself with the one helper, `keras_bert.decoding.trim_to_longest_row(
inputs)`, before calling the model, as the example above does.

Ids endpoints take the ids as sent, at any length up to the model's
`max_sequence_length`.
"""

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_masked_lm import BertMaskedLM
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_text_embedder import BertTextEmbedder
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.models.task import Task
from keras_bert.serving.backbone import backbone_endpoints
from keras_bert.serving.classifier import classifier_endpoints
from keras_bert.serving.masked_lm import masked_lm_endpoints
from keras_bert.serving.multiple_choice import multiple_choice_endpoints
from keras_bert.serving.question_answerer import question_answering_endpoints
from keras_bert.serving.text_embedder import text_embedder_endpoints
from keras_bert.serving.token_classifier import token_classification_endpoints

# Model class → endpoint builder.
_BUILDERS = {
    BertBackbone: backbone_endpoints,
    BertClassifier: classifier_endpoints,
    BertMaskedLM: masked_lm_endpoints,
    BertMultipleChoice: multiple_choice_endpoints,
    BertQuestionAnswerer: question_answering_endpoints,
    BertTextEmbedder: text_embedder_endpoints,
    BertTokenClassifier: token_classification_endpoints,
}


def register_endpoints(model_class, builder):
    """Makes `export_saved_model` serve `model_class` with `builder`.

    Args:
        model_class: a `keras.Model` subclass, e.g. a `keras_bert.models.Task`
            subclass. Its subclasses serve the same, unless they register
            their own builder.
        builder: callable `(model, preprocessor, **options) -> dict` from
            endpoint name to `(function, input_signature)`.
    """
    if not isinstance(model_class, type):
        raise ValueError(
            "Received an invalid value for argument `model_class`, expected "
            f"a class. Received: model_class={model_class!r}"
        )
    if not callable(builder):
        raise ValueError(
            "Received an invalid value for argument `builder`, expected a "
            "callable `(model, preprocessor, **options) -> endpoints`. "
            f"Received: builder={builder!r}"
        )
    _BUILDERS[model_class] = builder


def endpoints_builder(model_class):
    """The builder for `model_class` (or its nearest base), or `None`."""
    for cls in model_class.__mro__:
        if cls in _BUILDERS:
            return _BUILDERS[cls]
    return None


def serving_endpoints(model, preprocessor, **options):
    """The SavedModel endpoints of `model` with its preprocessor.

    Args:
        model: a registered model (`BertBackbone`, a task model with a
            serving signature, or a class given to `register_endpoints`).
        preprocessor: the `keras_bert.BertPreprocessor` to serve with.
        **options: the builder's options (see `export_saved_model`).

    Returns a dict from endpoint name to `(function, input_signature)`;
    `serving_default` takes raw strings.
    """
    builder = endpoints_builder(type(model))
    if builder is not None:
        return builder(model, preprocessor, **options)
    name = type(model).__name__
    if isinstance(model, Task):
        raise ValueError(
            f"{name} has no serving signature. For a {name} export its "
            "`.backbone` (embeddings), or export a task model that has one."
        )
    raise ValueError(
        "export_saved_model exports a keras_bert model (BertBackbone or a "
        f"task model); received a {name}."
    )


def servable_task_names():
    """`{TASK_NAME: class}` of the task classes that have endpoints.

    In `Task.registry` order (keras_bert's own first), e.g. `classifier`,
    `question_answering`, `token_classification`, `text_embedder`; what
    `recipes/export.py --task` offers besides `embeddings` and `auto`.
    """
    return {
        task.TASK_NAME: task
        for task in Task.registry
        if task.TASK_NAME and endpoints_builder(task) is not None
    }
