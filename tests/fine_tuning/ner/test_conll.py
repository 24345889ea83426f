"""CoNLL files: the real CoNLL-2003 and WNUT-17 files, schemes, bad input."""

import functools
import logging

import pytest

from keras_bert.fine_tuning.ner.conll import convert_tags
from keras_bert.fine_tuning.ner.conll import entity_types
from keras_bert.fine_tuning.ner.conll import label_list
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.fine_tuning.ner.conll import write_conll_predictions
from keras_bert.training.ner_metrics import get_entities
from tests.fine_tuning.ner.data import shared_path

# (directory, file, sentences, tokens, entity types), from the READMEs.
REAL_FILES = [
    ("conll2003", "train.txt", 14041, 203621, 4),
    ("conll2003", "valid.txt", 3250, 51362, 4),
    ("wnut17", "wnut17train.conll", 3394, 62730, 6),
    ("wnut17", "emerging.dev.conll", 1009, 15733, 6),
]
REAL_NAMES = [(directory, name) for directory, name, *_ in REAL_FILES]


@functools.lru_cache(maxsize=None)
def read_real(directory, name, **options):
    return read_conll(shared_path(directory, name), **options)


def write(tmp_path, text, name="data.conll"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def _capture_warnings(caplog):
    caplog.set_level(logging.INFO)
    # absl's logger keeps its own level (WARNING once any test parsed
    # absl flags): the INFO lines these tests read need it lowered.
    caplog.set_level(logging.INFO, logger="absl")


# === Real files ===


@pytest.mark.parametrize(
    "directory, name, num_sentences, num_tokens, num_types", REAL_FILES
)
def test_real_file_counts(
    directory, name, num_sentences, num_tokens, num_types
):
    data = read_real(directory, name)
    assert len(data["words"]) == num_sentences
    assert sum(map(len, data["words"])) == num_tokens
    assert [len(t) for t in data["tags"]] == [len(w) for w in data["words"]]
    assert len(entity_types(data["tags"])) == num_types
    assert len(data["document"]) == len(data["line"]) == num_sentences
    assert all(words for words in data["words"])  # no empty sentence


def test_conll_documents_and_first_sentence():
    data = read_real("conll2003", "valid.txt")
    # 216 -DOCSTART- lines, each opening a non-empty document.
    assert sorted(set(data["document"])) == list(range(216))
    assert data["document"] == sorted(data["document"])
    # Line 1 is -DOCSTART-, line 2 blank: the first sentence is on line 3.
    assert data["line"][0] == 3
    assert data["words"][0][:3] == ["CRICKET", "-", "LEICESTERSHIRE"]
    # On disk "I-ORG" after "O" (IOB1), read as IOB2.
    assert data["tags"][0][:3] == ["O", "O", "B-ORG"]
    assert entity_types(data["tags"]) == ["LOC", "MISC", "ORG", "PER"]
    assert label_list(data["tags"]) == [
        "O", "B-LOC", "I-LOC", "B-MISC", "I-MISC",
        "B-ORG", "I-ORG", "B-PER", "I-PER",
    ]  # fmt: skip


def test_wnut_tab_lines_separate_sentences():
    path = shared_path("wnut17", "wnut17train.conll")
    data = read_real("wnut17", "wnut17train.conll")
    with open(path, encoding="utf-8") as file:
        text = file.read()
    # A reader that splits only on empty lines merges the sentences that a
    # lone-tab line separates: 1,000 blocks instead of 3,394 sentences.
    blocks = [block for block in text.split("\n\n") if block.strip()]
    assert len(blocks) == 1000
    assert len(data["words"]) == 3394
    assert set(data["document"]) == {0}  # no -DOCSTART- in WNUT
    assert entity_types(data["tags"]) == [
        "corporation", "creative-work", "group",
        "location", "person", "product",
    ]  # fmt: skip
    # Each sentence's first line holds its first word.
    lines = text.split("\n")
    for words, line in zip(data["words"], data["line"]):
        assert lines[line - 1].split("\t")[0] == words[0]


@pytest.mark.parametrize("directory, name", REAL_NAMES)
def test_real_file_scheme_round_trips(directory, name):
    data = read_real(directory, name)
    on_disk = _column(shared_path(directory, name), -1)
    iob1 = read_real(directory, name, target_scheme="iob1")["tags"]
    iob2 = data["tags"]
    iobes = read_real(directory, name, target_scheme="iobes")["tags"]
    num_entities = 0
    non_canonical_lines = []
    for index, raw in enumerate(on_disk):
        assert convert_tags(raw, "iob1", "iob2") == iob2[index]
        assert convert_tags(iob2[index], "iob2", "iobes") == iobes[index]
        assert convert_tags(iobes[index], "iobes", "iob2") == iob2[index]
        assert convert_tags(iob2[index], "iob2", "iob1") == iob1[index]
        assert convert_tags(iobes[index], "iobes", "iob1") == iob1[index]
        assert convert_tags(iob1[index], "iob1", "iob1") == iob1[index]
        entities = get_entities(iob2[index])
        assert get_entities(raw) == entities
        assert get_entities(iob1[index]) == get_entities(iobes[index])
        assert get_entities(iobes[index]) == entities
        num_entities += len(entities)
        non_canonical_lines += [
            data["line"][index] + offset
            for offset, (tag, canonical) in enumerate(zip(raw, iob1[index]))
            if tag != canonical
        ]
    assert num_entities > 800
    if directory == "conll2003":
        # CoNLL-2003 is IOB1: B- only starts an entity right after one of
        # its type; IOB1 -> IOB1 keeps it, except for two quirks of the
        # train file, B-MISC after O, which become I-MISC.
        assert any(t.startswith("B-") for s in on_disk for t in s)
        assert (
            non_canonical_lines
            == {
                "train.txt": [152428, 175436],
                "valid.txt": [],
            }[name]
        )
    else:
        # WNUT-17 is IOB2: IOB1 -> IOB2 is the identity on it.
        assert iob2 == on_disk


def test_iobes_file_is_detected(tmp_path, caplog):
    data = read_real("conll2003", "valid.txt", target_scheme="iobes")
    path = str(tmp_path / "iobes.txt")
    write_conll_predictions(path, data["words"], None, data["tags"])
    again = read_conll(path)  # scheme="auto" finds E- and S- tags
    assert again["tags"] == read_real("conll2003", "valid.txt")["tags"]
    assert f"{path}; tags iobes -> iob2" in caplog.text


def test_pos_column_as_tags():
    # CoNLL-2003 column 1 is the POS tag: not an entity tag.
    with pytest.raises(ValueError, match=r"line 3: 'CRICKET NNP I-NP O'"):
        read_conll(shared_path("conll2003", "valid.txt"), tag_column=1)
    # Column 2, the chunk tags, is IOB1 too: noun phrases are entities.
    chunks = read_real("conll2003", "valid.txt", tag_column=2)
    assert chunks["words"] == read_real("conll2003", "valid.txt")["words"]
    assert chunks["tags"][0][:3] == ["B-NP", "O", "B-NP"]
    assert "NP" in entity_types(chunks["tags"])


def test_unlabelled_file(tmp_path):
    path = write(tmp_path, "-DOCSTART-\n\nEU\nrejects\n\n\nPeter\n")
    data = read_conll(path, tag_column=None)
    assert data == {
        "words": [["EU", "rejects"], ["Peter"]],
        "tags": None,
        "document": [0, 0],
        "line": [3, 7],
    }
    data = read_real("conll2003", "valid.txt", tag_column=None)
    assert data["tags"] is None
    assert data["words"] == read_real("conll2003", "valid.txt")["words"]


# === Reading rules ===


def test_separators_documents_and_line_numbers(tmp_path):
    text = (
        "Before O\n"  # line 1: a sentence before any -DOCSTART-
        "\n"
        "-DOCSTART- O\n"  # the first document already has a sentence
        "EU B-ORG\n"  # 4
        "rejects O\n"
        " \t \n"  # whitespace only
        "\n"
        "\t\n"
        "Peter B-PER\n"  # 9
        "-DOCSTART- O\n"  # ends the sentence without a blank line
        "-DOCSTART- O\n"  # an empty document is not counted
        "\n"
        "Blair I-PER\n"  # 13; no final newline
    )
    data = read_conll(write(tmp_path, text))
    assert data["words"] == [
        ["Before"],
        ["EU", "rejects"],
        ["Peter"],
        ["Blair"],
    ]
    assert data["tags"] == [["O"], ["B-ORG", "O"], ["B-PER"], ["B-PER"]]
    assert data["document"] == [0, 1, 1, 2]
    assert data["line"] == [1, 4, 9, 13]


def test_columns_split_on_any_whitespace(tmp_path):
    text = "EU\t NNP  I-ORG\r\nrejects VBZ\tO\r\n\r\n"
    data = read_conll(write(tmp_path, text))
    assert data["words"] == [["EU", "rejects"]]
    assert data["tags"] == [["B-ORG", "O"]]


def test_delimiter(tmp_path):
    text = "New York\tB-LOC\nis\tO\n"
    data = read_conll(write(tmp_path, text), delimiter="\t")
    assert data["words"] == [["New York", "is"]]
    assert data["tags"] == [["B-LOC", "O"]]
    with pytest.raises(ValueError, match=r"line 2: 'is\\tO' has 2 columns"):
        read_conll(write(tmp_path, text))  # "New York" makes 3 columns


def test_no_break_space_stays_in_the_token(tmp_path):
    data = read_conll(write(tmp_path, "a\u00a0b O\n\u00a0 O\n"))
    assert data["words"] == [["a\u00a0b", "\u00a0"]]


@pytest.mark.parametrize(
    "scheme, target, expected",
    [
        ("auto", "iob2", ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]),
        ("iob1", "iob1", ["I-PER", "I-PER", "B-PER", "O", "I-LOC"]),
        ("iob1", "iobes", ["B-PER", "E-PER", "S-PER", "O", "S-LOC"]),
    ],
)
def test_scheme_and_target(tmp_path, scheme, target, expected):
    text = "A I-PER\nB I-PER\nC B-PER\nD O\nE I-LOC\n"
    data = read_conll(
        write(tmp_path, text), scheme=scheme, target_scheme=target
    )
    assert data["tags"] == [expected]


# === convert_tags ===

IOB1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG", "O"]
IOB2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG", "O"]
IOBES = ["B-PER", "E-PER", "S-PER", "O", "S-LOC", "B-ORG", "E-ORG", "O"]
SCHEME_TAGS = {"iob1": IOB1, "iob2": IOB2, "iobes": IOBES}


@pytest.mark.parametrize("source", ["iob1", "iob2", "iobes"])
@pytest.mark.parametrize("target", ["iob1", "iob2", "iobes"])
def test_convert_tags_all_directions(source, target):
    assert (
        convert_tags(SCHEME_TAGS[source], source, target)
        == (SCHEME_TAGS[target])
    )


def test_convert_tags_default_target_is_iob2():
    assert convert_tags(IOB1, "iob1") == IOB2


@pytest.mark.parametrize(
    "tags, source, target, expected",
    [
        # IOB2 that starts an entity with I- (after O, after another type,
        # at the start) is repaired.
        (["I-PER", "O", "I-PER", "I-LOC"], "iob2", "iob2",
         ["B-PER", "O", "B-PER", "B-LOC"]),
        # B- after O in IOB1 (not canonical) still starts one entity.
        (["O", "B-PER", "I-PER"], "iob1", "iob2", ["O", "B-PER", "I-PER"]),
        (["O", "B-PER", "I-PER"], "iob1", "iob1", ["O", "I-PER", "I-PER"]),
        # IOB1 writes B- only right after an entity of the same type.
        (["B-PER", "B-LOC", "B-LOC"], "iob2", "iob1",
         ["I-PER", "I-LOC", "B-LOC"]),
        # A lone B- or an unclosed B-/I- in IOBES is one entity.
        (["B-PER", "O", "I-LOC", "I-LOC"], "iobes", "iobes",
         ["S-PER", "O", "B-LOC", "E-LOC"]),
        # E- after O is a one-token entity; I- after E- starts one.
        (["O", "E-PER", "I-PER", "E-PER"], "iobes", "iob2",
         ["O", "B-PER", "B-PER", "I-PER"]),
        # Types with hyphens (WNUT) keep them.
        (["I-creative-work", "I-creative-work"], "iob1", "iobes",
         ["B-creative-work", "E-creative-work"]),
        ([], "iob1", "iobes", []),
    ],
)  # fmt: skip
def test_convert_tags_hand_cases(tags, source, target, expected):
    assert convert_tags(tags, source, target) == expected


@pytest.mark.parametrize(
    "tag, source",
    [
        ("E-PER", "iob1"),
        ("S-PER", "iob2"),
        ("PER", "iobes"),
        ("B-", "iob2"),
        ("B_PER", "iob2"),
        ("o", "iob2"),
        ("", "iob1"),
    ],
)
def test_convert_tags_rejects_bad_tags(tag, source):
    with pytest.raises(ValueError, match=f"{source.upper()} tag {tag!r}"):
        convert_tags(["O", tag], source, "iob2")


def test_convert_tags_rejects_unknown_schemes():
    with pytest.raises(ValueError, match=r"Received: source='bio'"):
        convert_tags(["O"], "bio")
    with pytest.raises(ValueError, match=r"Received: target='IOB2'"):
        convert_tags(["O"], "iob1", "IOB2")


def test_label_list_and_entity_types():
    tags = [["I-PER", "O", "S-LOC"], [], ["E-ORG", "B-PER"]]
    assert entity_types(tags) == ["LOC", "ORG", "PER"]
    assert label_list(tags) == [
        "O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER",
    ]  # fmt: skip
    assert label_list([["O"]]) == ["O"]
    with pytest.raises(ValueError, match=r"tag 'PER'"):
        entity_types([["O", "PER"]])


# === Errors ===


def test_wrong_column_count_names_the_line(tmp_path):
    text = "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\n\nrejects VBZ O\n"
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as error:
        read_conll(path)
    message = str(error.value)
    assert f"{path}, line 5: 'rejects VBZ O' has 3 columns" in message
    assert "first token line has 4" in message


def test_too_few_columns_for_the_tag_column(tmp_path):
    path = write(tmp_path, "EU I-ORG\nrejects O\n")
    with pytest.raises(ValueError, match=r"line 1: 'EU I-ORG' has 2 columns, "):
        read_conll(path, tag_column=2)
    with pytest.raises(ValueError, match=r"too few for tag_column=-3"):
        read_conll(path, tag_column=-3)
    # The token column is not a tag column.
    with pytest.raises(ValueError, match=r"tag_column=None"):
        read_conll(write(tmp_path, "EU\nrejects\n"))
    with pytest.raises(ValueError, match=r"tag_column=0"):
        read_conll(path, tag_column=0)


def test_bad_tag_names_the_line(tmp_path):
    path = write(tmp_path, "EU B-ORG\n\nrejects O\nGerman X-MISC\n")
    with pytest.raises(ValueError) as error:
        read_conll(path)
    message = str(error.value)
    assert f"{path}, line 4: 'German X-MISC'" in message
    assert "IOB1 tag 'X-MISC'" in message
    assert "scheme='auto'" in message
    # S- is not a tag of an explicit IOB2 file.
    path = write(tmp_path, "EU S-ORG\n")
    with pytest.raises(ValueError, match=r"line 1: 'EU S-ORG': .*IOB2 tag"):
        read_conll(path, scheme="iob2")


def test_bad_arguments(tmp_path):
    path = write(tmp_path, "EU B-ORG\n")
    with pytest.raises(ValueError, match=r"Received: scheme='bio'"):
        read_conll(path, scheme="bio")
    with pytest.raises(ValueError, match=r"Received: target_scheme='auto'"):
        read_conll(path, target_scheme="auto")
    with pytest.raises(ValueError, match=r"Received: tag_column='1'"):
        read_conll(path, tag_column="1")
    with pytest.raises(ValueError, match=r"Received: delimiter=''"):
        read_conll(path, delimiter="")


def test_missing_file(tmp_path):
    path = str(tmp_path / "nowhere" / "train.txt")
    with pytest.raises(FileNotFoundError, match=f"No CoNLL file at {path}"):
        read_conll(path)


def test_invalid_utf8_becomes_replacement_characters(tmp_path, caplog):
    path = tmp_path / "latin1.conll"
    path.write_bytes(b"EU B-ORG\n\nM\xfcller B-PER\nsays O\n\xff\xfe O\n")
    data = read_conll(str(path))
    assert data["words"] == [["EU"], ["M\ufffdller", "says", "\ufffd\ufffd"]]
    assert data["tags"] == [["B-ORG"], ["B-PER", "O", "O"]]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"{path}: invalid UTF-8 from line 3 on" in warnings[0].getMessage()


def test_empty_file(tmp_path):
    data = read_conll(write(tmp_path, "\n\t\n"))
    assert data == {"words": [], "tags": [], "document": [], "line": []}


# === write_conll_predictions ===


def test_write_predictions_round_trip(tmp_path):
    data = read_real("conll2003", "valid.txt")
    # A deterministic "prediction": every third sentence all O.
    predicted = [
        ["O"] * len(tags) if index % 3 == 0 else tags
        for index, tags in enumerate(data["tags"])
    ]
    path = str(tmp_path / "out" / "predictions.txt")  # makes out/
    write_conll_predictions(path, data["words"], data["tags"], predicted)
    gold = read_conll(path, tag_column=1)
    assert gold["words"] == data["words"]
    assert gold["tags"] == data["tags"]
    again = read_conll(path, tag_column=2)
    assert again["tags"] == predicted
    assert again["line"] == gold["line"]


def test_write_predictions_format(tmp_path):
    path = str(tmp_path / "predictions.txt")
    words = [["EU", "rejects"], [], ["Peter"]]
    gold = [["B-ORG", "O"], [], ["B-PER"]]
    predicted = [["B-ORG", "O"], [], ["B-LOC"]]
    write_conll_predictions(path, words, gold, predicted)
    with open(path, encoding="utf-8") as file:
        assert file.read() == (
            "EU B-ORG B-ORG\nrejects O O\n\nPeter B-PER B-LOC\n\n"
        )
    write_conll_predictions(path, words, None, predicted)
    with open(path, encoding="utf-8") as file:
        assert file.read() == "EU B-ORG\nrejects O\n\nPeter B-LOC\n\n"
    assert read_conll(path)["tags"] == [["B-ORG", "O"], ["B-LOC"]]


def test_write_predictions_checks_lengths(tmp_path):
    path = str(tmp_path / "predictions.txt")
    words = [["EU", "rejects"], ["Peter"]]
    gold = [["B-ORG", "O"], ["B-PER"]]
    with pytest.raises(ValueError, match=r"Sentence 1 has mismatched"):
        write_conll_predictions(path, words, gold, [["B-ORG", "O"], []])
    with pytest.raises(ValueError, match=r"2 words, 1 gold_tags, 2 predicted"):
        write_conll_predictions(path, words, [["O"], ["O"]], gold)
    with pytest.raises(ValueError, match=r"1 entries for 2 sentences"):
        write_conll_predictions(path, words, gold, gold[:1])
    with pytest.raises(ValueError, match=r"Sentence 0 holds 'New York'"):
        write_conll_predictions(path, [["New York"]], None, [["B-LOC"]])


def _column(path, column):
    """The tags of `path` by a plain split, for comparison."""
    sentences, sentence = [], []
    with open(path, encoding="utf-8") as file:
        for line in file:
            fields = line.split()
            if fields and fields[0] != "-DOCSTART-":
                sentence.append(fields[column])
            elif sentence:
                sentences.append(sentence)
                sentence = []
    if sentence:
        sentences.append(sentence)
    return sentences
