"""The serving registry: one place says what each model class serves."""

import keras
import pytest

import keras_bert
from keras_bert.models import Task
from keras_bert.serving import endpoints
from keras_bert.serving.classifier import classifier_endpoints
from tests.helpers import tiny_backbone_config


@pytest.fixture
def sub_classifier():
    """A user's subclass, with no registration of its own."""

    class SubClassifier(keras_bert.BertClassifier):
        TASK_NAME = None

    yield SubClassifier
    # Out of the task registry again, where it would take part in other
    # tests' checkpoint messages.
    Task.registry.remove(SubClassifier)


def preprocessor():
    tokenizer = keras_bert.BertTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]
    )
    return keras_bert.BertPreprocessor(tokenizer, sequence_length=8)


def test_keras_bert_models_are_registered():
    assert endpoints.endpoints_builder(keras_bert.BertBackbone) is not None
    for model_class in (
        keras_bert.BertClassifier,
        keras_bert.BertQuestionAnswerer,
        keras_bert.BertTokenClassifier,
        keras_bert.BertMaskedLM,
    ):
        assert endpoints.endpoints_builder(model_class) is not None


def test_a_subclass_serves_as_its_base(sub_classifier):
    assert endpoints.endpoints_builder(sub_classifier) is classifier_endpoints
    model = sub_classifier(
        keras_bert.BertBackbone(**tiny_backbone_config()), num_classes=2
    )
    served = keras_bert.serving.serving_endpoints(
        model, preprocessor(), labels=["no", "yes"]
    )
    assert set(served) == {"serving_default", "predict_ids"}


def test_servable_task_names_are_the_recipe_heads():
    names = keras_bert.serving.servable_task_names()
    assert names["classifier"] is keras_bert.BertClassifier
    assert names["question_answering"] is keras_bert.BertQuestionAnswerer
    assert names["token_classification"] is keras_bert.BertTokenClassifier
    assert names["masked_lm"] is keras_bert.BertMaskedLM  # fill-mask


def test_a_model_that_is_not_keras_berts_is_refused():
    model = keras.Sequential([keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="received a Sequential"):
        keras_bert.serving.serving_endpoints(model, preprocessor())


def test_register_endpoints_checks_its_arguments():
    with pytest.raises(ValueError, match="model_class"):
        keras_bert.serving.register_endpoints("a name", classifier_endpoints)
    with pytest.raises(ValueError, match="builder"):
        keras_bert.serving.register_endpoints(
            keras_bert.BertClassifier, "not callable"
        )
    assert (
        endpoints.endpoints_builder(keras_bert.BertClassifier)
        is classifier_endpoints
    )
