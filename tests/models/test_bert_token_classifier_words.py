"""BertTokenClassifier on words with tags: `fit`, `evaluate`, `predict`.

Checked: `fit` on word lists with tag names learns a toy tagging task
(the loss falls, `predict` gives the right tag per word, sentences longer
than a window included); its windows and labels are the recipe's
(`ner_features`); label names are inferred from the tags when the model
has none, and survive `get_config` and `.keras` saving; `evaluate` adds
entity-level scores equal to `entity_scores` of the predicted tags; the
SavedModel export serves the fit model; a sentence with as many tags as
words, an unknown tag and a model of another size are refused before any
training, naming the bad value; `predict` on texts still gives entities.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.fine_tuning.ner import entity_scores
from keras_bert.fine_tuning.ner import ner_features
from keras_bert.models.word_tags import infer_labels
from keras_bert.serving import export_saved_model
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "mary", "lives",
    "in", "paris", "london", "and", "works", "##s", ".",
]  # fmt: skip
PEOPLE = ["John", "Mary", "Johns"]
PLACES = ["Paris", "London"]
OTHER = ["lives", "in", "and", "works", "."]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def toy_sentences(count, seed=0, max_words=9):
    """Random sentences: people are PER, places LOC (two in a row: B, I)."""
    rng = np.random.default_rng(seed)
    words, tags = [], []
    for _ in range(count):
        sentence, sentence_tags = [], []
        for _ in range(rng.integers(1, max_words + 1)):
            kind = rng.integers(3)
            if kind == 0:
                sentence.append(str(rng.choice(PEOPLE)))
                sentence_tags.append("B-PER")
            elif kind == 1:
                sentence.append(str(rng.choice(PLACES)))
                previous = sentence_tags[-1] if sentence_tags else "O"
                sentence_tags.append("I-LOC" if "LOC" in previous else "B-LOC")
            else:
                sentence.append(str(rng.choice(OTHER)))
                sentence_tags.append("O")
        words.append(sentence)
        tags.append(sentence_tags)
    return words, tags


def tagger(labels=None, num_classes=len(LABELS), sequence_length=16, seed=0):
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(VOCABULARY), hidden_dim=16,
            intermediate_dim=32,
        )
    )  # fmt: skip
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=sequence_length
    )
    model = keras_bert.BertTokenClassifier(
        backbone, num_classes, labels=labels, preprocessor=preprocessor
    )
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    return model


@pytest.fixture(scope="module")
def trained():
    """A tagger fit on the toy words with inferred label names."""
    model = tagger(labels=None)
    words, tags = toy_sentences(96)
    history = model.fit(
        words, tags, validation_data=toy_sentences(16, seed=1),
        epochs=8, batch_size=16, seed=0, verbose=0,
    )  # fmt: skip
    return model, history


def test_fit_on_words_lowers_the_loss_and_reports_validation(trained):
    _, history = trained
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    assert len(history.history["val_loss"]) == 8


def test_predict_on_words_gives_one_tag_per_word(trained):
    model, _ = trained
    words, tags = toy_sentences(20, seed=2, max_words=20)
    predicted = model.predict(words)
    assert [len(p) for p in predicted] == [len(w) for w in words]
    assert all(isinstance(tag, str) for p in predicted for tag in p)
    right = sum(
        p == t for ps, ts in zip(predicted, tags) for p, t in zip(ps, ts)
    )
    assert right / sum(len(t) for t in tags) > 0.9


def test_long_sentences_are_windowed_not_truncated(trained):
    model, _ = trained
    # 40 words in windows of 16 positions: every word gets a tag.
    words = [["John", "lives", "in", "Paris", "."] * 8]
    (predicted,) = model.predict(words)
    assert len(predicted) == 40
    assert predicted[-5:].count("B-PER") == 1


def test_inferred_labels_are_saved_and_round_trip(trained, tmp_path):
    model, _ = trained
    assert model.labels == LABELS  # label_list: O, then B-/I- per type
    assert model.get_config()["labels"] == LABELS
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.labels == LABELS
    words, _ = toy_sentences(5, seed=3)
    assert restored.predict(words) == model.predict(words)


def test_evaluate_adds_entity_scores_of_the_predicted_tags(trained):
    model, _ = trained
    words, tags = toy_sentences(24, seed=4)
    results = model.evaluate(words, tags, return_dict=True, verbose=0)
    expected = entity_scores(tags, model.predict(words))
    assert results["entity_f1"] == pytest.approx(expected["f1"])
    assert results["entity_precision"] == pytest.approx(expected["precision"])
    assert results["entity_f1"] > 0.5
    assert {"loss", "accuracy"} <= set(results)
    values = model.evaluate(words, tags, verbose=0)
    assert values[-1] == pytest.approx(results["entity_f1"])


def test_export_serves_the_model_fit_on_words(trained, tmp_path):
    model, _ = trained
    path = export_saved_model(model, export_dir=str(tmp_path / "export"))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    texts = ["John lives in Paris .", "Mary works in London and Paris"]
    outputs = serve(text=tf.constant(texts))
    expected = model.predict(texts, verbose=0)
    served = outputs["entity_type"].numpy().astype(str)
    np.testing.assert_array_equal(served, expected["entity_type"])
    np.testing.assert_array_equal(outputs["start"], expected["start"])
    assert {"PER", "LOC"} <= set(served.flat)


def test_windows_and_labels_are_the_recipes():
    model = tagger(labels=LABELS)
    words, tags = toy_sentences(6, seed=5, max_words=30)
    ids = [[LABELS.index(t) for t in s] for s in tags]
    expected = ner_features(
        model.preprocessor.tokenizer, words, ids, sequence_length=16
    )
    features = model._word_features(words, ids)
    for name in expected:
        np.testing.assert_array_equal(features[name], expected[name])
    assert len(features["token_ids"]) > len(words)  # some were windowed


def test_fixed_labels_are_kept():
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    model = tagger(labels=labels)
    words, tags = toy_sentences(8)
    model.fit(words, tags, epochs=1, batch_size=4, verbose=0)
    assert model.labels == labels


def test_ragged_tags_name_the_sentence_and_both_lengths():
    model = tagger()
    words, tags = toy_sentences(4)
    words[2] = ["John", "lives", "in"]
    tags[2] = ["B-PER", "O"]
    with pytest.raises(ValueError, match="Sentence 2 has 3 words but 2 tags"):
        model.fit(words, tags, epochs=1, verbose=0)
    assert model.labels is None  # nothing was set
    assert model.optimizer.iterations.numpy() == 0  # nor trained


def test_ragged_validation_tags_are_refused():
    model = tagger()
    words, tags = toy_sentences(4)
    bad = (words, [t[:-1] for t in tags])
    with pytest.raises(ValueError, match="Sentence 0 has .* in `validation"):
        model.fit(words, tags, validation_data=bad, verbose=0)


def test_unknown_tag_with_fixed_labels_names_tag_and_labels():
    model = tagger(labels=LABELS)
    words, tags = toy_sentences(4)
    tags[1][0] = "B-MISC"
    with pytest.raises(ValueError, match=r"'B-MISC'.*\['O', 'B-LOC'"):
        model.fit(words, tags, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="'B-MISC'"):
        model.evaluate(words, tags, verbose=0)


def test_inferred_labels_of_another_count_than_num_classes():
    model = tagger(num_classes=3)
    words, tags = toy_sentences(4)
    with pytest.raises(ValueError, match="num_classes=3.*num_classes=5"):
        model.fit(words, tags, epochs=1, verbose=0)


def test_words_need_a_preprocessor():
    model = tagger()
    model.preprocessor = None
    words, tags = toy_sentences(2)
    with pytest.raises(ValueError, match="no preprocessor"):
        model.fit(words, tags, verbose=0)
    assert model.labels is None


def test_validation_split_takes_the_last_sentences():
    model = tagger()
    words, tags = toy_sentences(8)
    history = model.fit(
        words, tags, validation_split=0.25, batch_size=4, verbose=0
    )
    expected = model.evaluate(words[6:], tags[6:], return_dict=True)
    assert history.history["val_loss"][0] == pytest.approx(expected["loss"])


def test_shuffle_false_trains_on_the_windows_in_order(monkeypatch):
    model = tagger(labels=LABELS)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    words, tags = toy_sentences(8)
    seen = []
    train_step = model.train_step

    def recording_step(data):
        seen.append(data[0]["token_ids"].numpy())
        return train_step(data)

    monkeypatch.setattr(model, "train_step", recording_step)
    model.fit(words, tags, batch_size=4, shuffle=False, epochs=2, verbose=0)
    ids = [[LABELS.index(t) for t in s] for s in tags]
    windows = model._word_features(words, ids)["token_ids"]
    assert len(seen) == 4  # 2 batches of 4 windows, twice
    for step, batch in enumerate(seen):
        rows = windows[4 * (step % 2) : 4 * (step % 2) + 4]
        np.testing.assert_array_equal(batch, rows[:, : batch.shape[1]])


def test_infer_labels_of_tags_that_are_not_bio():
    assert infer_labels([["I-PER", "O"], ["B-LOC"]]) == LABELS
    assert infer_labels([["NN", "VB"], ["DT", "NN"]]) == ["DT", "NN", "VB"]
    assert infer_labels([["S-PER", "O"]]) == ["O", "S-PER"]


def test_predict_on_texts_still_gives_entities(trained):
    model, _ = trained
    entities = model.predict(["John lives in Paris ."], verbose=0)
    assert entities["num_entities"].shape == (1,)
