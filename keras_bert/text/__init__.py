"""Text: BERT's WordPiece tokenizer, vocabulary building and input packing."""

from keras_bert.text.bert_preprocessor import BertPreprocessor
from keras_bert.text.bert_tokenizer import BertTokenizer
from keras_bert.text.vocabulary import build_vocabulary
from keras_bert.text.vocabulary import load_vocabulary
from keras_bert.text.vocabulary import save_vocabulary

__all__ = [
    "BertPreprocessor",
    "BertTokenizer",
    "build_vocabulary",
    "load_vocabulary",
    "save_vocabulary",
]
