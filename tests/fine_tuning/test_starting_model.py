"""load_task_model: a task model from a checkpoint or a preset."""

import pytest

import keras_bert
from keras_bert.fine_tuning import load_task_model

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]


def test_preset_gets_an_embedding_table_the_size_of_the_vocabulary(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCABULARY) + "\n")
    model, tokenizer = load_task_model(
        keras_bert.BertClassifier,
        preset="bert_tiny",
        vocabulary=str(vocab_file),
        num_classes=3,
    )
    assert isinstance(model, keras_bert.BertClassifier)
    assert model.num_classes == 3
    assert model.backbone.vocabulary_size == len(VOCABULARY)
    assert tokenizer.vocabulary_size() == len(VOCABULARY)
    with pytest.raises(ValueError, match="sequence_length=4096 exceeds"):
        load_task_model(
            keras_bert.BertClassifier,
            preset="bert_tiny",
            vocabulary=str(vocab_file),
            sequence_length=4096,
            num_classes=3,
        )


def test_needs_exactly_one_source_and_a_vocabulary_for_presets():
    with pytest.raises(ValueError, match="exactly one of"):
        load_task_model(keras_bert.BertClassifier, num_classes=2)
    with pytest.raises(ValueError, match="exactly one of"):
        load_task_model(
            keras_bert.BertClassifier,
            init_checkpoint="ckpt",
            preset="bert_tiny",
        )
    with pytest.raises(ValueError, match="vocabulary=PATH/vocab.txt"):
        load_task_model(keras_bert.BertClassifier, preset="bert_tiny")
