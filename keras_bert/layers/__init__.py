"""BERT's building blocks, one public layer per module."""

from keras_bert.layers.bert_embedding import BertEmbedding
from keras_bert.layers.dropout import Dropout
from keras_bert.layers.layer_norm import LayerNorm
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.position_embedding import PositionEmbedding
from keras_bert.layers.segment_embedding import SegmentEmbedding
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock

__all__ = [
    "BertEmbedding",
    "Dropout",
    "LayerNorm",
    "MaskedLMHead",
    "PositionEmbedding",
    "SegmentEmbedding",
    "TransformerEncoderBlock",
]
