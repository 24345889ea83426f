"""BERT models: the backbone and its task models."""

from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_masked_lm import BertMaskedLM
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_text_embedder import BertTextEmbedder
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.models.document_windowing import DocumentWindowing
from keras_bert.models.frozen_features_tagger import FrozenFeaturesTagger
from keras_bert.models.label_modes import MultiLabel
from keras_bert.models.label_modes import Regression
from keras_bert.models.label_modes import SingleLabel
from keras_bert.models.lora import merge_lora
from keras_bert.models.pair_embedding_model import PairEmbeddingModel
from keras_bert.models.presets import BACKBONE_PRESETS
from keras_bert.models.task import Task

__all__ = [
    "BACKBONE_PRESETS",
    "BertBackbone",
    "BertClassifier",
    "BertMaskedLM",
    "BertMultipleChoice",
    "BertQuestionAnswerer",
    "BertTextEmbedder",
    "BertTokenClassifier",
    "DocumentWindowing",
    "FrozenFeaturesTagger",
    "MultiLabel",
    "PairEmbeddingModel",
    "Regression",
    "SingleLabel",
    "Task",
    "backbone_of",
    "merge_lora",
]
