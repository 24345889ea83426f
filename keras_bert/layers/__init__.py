"""BERT's building blocks, one public layer per module."""

from keras_bert.layers.bert_embedding import BertEmbedding
from keras_bert.layers.closed_form_layer_norm import ClosedFormLayerNorm
from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.hidden_state_combination import HiddenStateCombination
from keras_bert.layers.int8_dense import Int8Dense
from keras_bert.layers.lora_dense import LoraDense
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.optimizations import OPTIMIZATIONS
from keras_bert.layers.position_embedding import PositionEmbedding
from keras_bert.layers.segment_embedding import SegmentEmbedding
from keras_bert.layers.sentence_pooling import SentencePooling
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.layers.window_aggregation import WindowAggregation
from keras_bert.layers.window_rows import WindowRows

__all__ = [
    "OPTIMIZATIONS",
    "BertEmbedding",
    "ClosedFormLayerNorm",
    "HalfBitsDropout",
    "HiddenStateCombination",
    "Int8Dense",
    "LoraDense",
    "MaskedLMHead",
    "PositionEmbedding",
    "SegmentEmbedding",
    "SentencePooling",
    "TransformerEncoderBlock",
    "WindowAggregation",
    "WindowRows",
]
