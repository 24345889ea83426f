"""Users' files for `ClassificationFineTuning`: CSV, a BOM, other column
names (`--text_column` ...), `--multi_label` on a single-label file, and a
held-out split when there is no eval file."""

import json

import pytest

from keras_bert.fine_tuning.classify import ClassificationFineTuning
from keras_bert.fine_tuning.classify import read_classification_examples
from tests.fine_tuning.classify.test_job import model_fn
from tests.fine_tuning.ner.data import shared_path


def write(tmp_path, name, text, bom=False):
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return str(path)


def test_csv_with_quoted_commas_and_newlines(tmp_path):
    path = write(tmp_path, "t.csv", 'text,label\n"good, really",pos\n'
                 '"dull\nand long",neg\nfine,pos\n')  # fmt: skip
    examples = read_classification_examples(path)
    assert examples.texts[0].tolist() == ["good, really", "dull\nand long",
                                          "fine"]  # fmt: skip
    assert examples.labels == ["pos", "neg", "pos"]


def test_a_tsv_saved_with_a_byte_order_mark(tmp_path):
    path = write(tmp_path, "t.tsv", "text\tlabel\nok\t1\n", bom=True)
    assert read_classification_examples(path).labels == ["1"]


def test_column_flags_name_text_pair_and_label(tmp_path):
    path = write(tmp_path, "s.tsv", "sentence\tlabel\nit works\t1\nno\t0\n")
    examples = read_classification_examples(path, text_column="sentence")
    assert examples.texts[0].tolist() == ["it works", "no"]
    pairs = write(tmp_path, "p.jsonl", json.dumps(
        {"premise": "a", "hypothesis": "b", "gold": "yes"}) + "\n")  # fmt: skip
    examples = read_classification_examples(
        pairs, text_column="premise", text_b_column="hypothesis",
        label_column="gold",
    )  # fmt: skip
    assert [side.tolist() for side in examples.texts] == [["a"], ["b"]]
    assert examples.labels == ["yes"]
    with pytest.raises(ValueError, match=(
        r"s.tsv, line 1: no column `sentences`; columns found: \['sentence', "
        r"'label'\]. Set --text_column"
    )):  # fmt: skip
        read_classification_examples(path, text_column="sentences")
    with pytest.raises(ValueError, match=r"no `label` column.*\['sentence', "
                       r"'label2'\]. Set --label_column"):  # fmt: skip
        path = write(tmp_path, "l.tsv", "sentence\tlabel2\na\t1\n")
        read_classification_examples(path, text_column="sentence")


def test_glue_sst2_dev_with_text_column_sentence():
    sst2 = shared_path("glue", "SST-2", "dev.tsv")  # skips: fails in CI
    examples = read_classification_examples(sst2, text_column="sentence")
    assert len(examples) == 872 and examples.label_set == ["0", "1"]


def test_multi_label_on_a_single_label_file_is_refused(tmp_path):
    single = write(tmp_path, "s.jsonl", "".join(
        json.dumps({"text": text, "label": label}) + "\n"
        for text, label in [("a", "x"), ("b", "y"), ("c", "x")]))  # fmt: skip
    job = ClassificationFineTuning(single, single, model_fn, multi_label=True)
    with pytest.raises(
        ValueError,
        match="every row has exactly one label, a "
        "plain name: a single-label file. Drop --multi_label",
    ):
        job.load_data()
    # Clearly multi-label: a `labels` column, or commas in a `label` cell.
    for name, text in [
        ("m.jsonl", '{"text": "a", "labels": ["x"]}\n{"text": "b", '
         '"labels": ["y"]}\n'),
        ("m.tsv", "text\tlabel\na\tx,y\nb\ty\n"),
    ]:  # fmt: skip
        path = write(tmp_path, name, text)
        job = ClassificationFineTuning(path, path, model_fn, multi_label=True)
        job.load_data()
        assert job.label_names == ["x", "y"]


def rows_file(tmp_path, count=40):
    return write(tmp_path, "train.csv", "text,label\n" + "".join(
        f"text {i},{'ab'[i % 2]}\n" for i in range(count)))  # fmt: skip


def test_without_an_eval_file_a_seeded_holdout_is_scored(tmp_path):
    path = rows_file(tmp_path)
    job = ClassificationFineTuning(path, None, model_fn, seed=3)
    job.load_data()
    held_out = job.eval_sets["validation"]
    assert (len(job.train), len(held_out)) == (36, 4)
    # Never a training row scored.
    assert not set(held_out.texts[0]) & set(job.train.texts[0])
    assert job.holdout["num_held_out"] == 4 and job.holdout["seed"] == 3
    assert "held out 4 of 40 examples" in job.holdout["note"]
    again = ClassificationFineTuning(path, None, model_fn, seed=3)
    again.load_data()
    assert list(again.eval_sets["validation"].texts[0]) == list(
        held_out.texts[0]
    )
    other = ClassificationFineTuning(path, None, model_fn, seed=4)
    other.load_data()
    assert set(other.eval_sets["validation"].texts[0]) != set(held_out.texts[0])
    job.load_data()  # read once: a second call keeps the split
    assert len(job.train) == 36


def test_a_held_out_label_with_no_other_example_trains(tmp_path):
    path = write(tmp_path, "t.tsv", "text\tlabel\n" + "".join(
        f"t{i}\t{'only' if i == 0 else 'ab'[i % 2]}\n" for i in range(30)
    ))  # fmt: skip
    for seed in range(10):
        job = ClassificationFineTuning(path, None, model_fn, seed=seed)
        job.load_data()
        assert "only" not in job.eval_sets["validation"].labels
        assert len(job.train) + len(job.eval_sets["validation"]) == 30
