"""The reader of users' table files: JSONL, TSV, CSV (quoted), a BOM,
sniffed names, and errors that name the file, the line and the fix."""

import json

import pytest

from keras_bert.data.text_tables import read_text_table


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


ROWS = [{"text": 'a "quoted", comma', "label": "pos"},
        {"text": "two\nlines", "label": "neg"}]  # fmt: skip


def test_jsonl_tsv_and_csv_give_the_same_rows(tmp_path):
    jsonl = write(
        tmp_path, "a.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS)
    )
    # RFC 4180: a cell with commas, quotes or a newline is quoted.
    csv_text = 'text,label\n"a ""quoted"", comma",pos\n"two\nlines",neg\n'
    csv_path = write(tmp_path, "a.csv", csv_text)
    table = read_text_table(csv_path)
    assert table.format == "csv" and table.columns == ["text", "label"]
    assert [row for _, row in table.rows] == ROWS
    # The quoted newline: the second row starts on line 3, not 4.
    assert [line for line, _ in table.rows] == [2, 3]
    assert [row for _, row in read_text_table(jsonl).rows] == ROWS
    # TSV cells are read as they are: quotes stay (GLUE's files).
    tsv = read_text_table(write(tmp_path, "a.tsv", 'text\tlabel\n"a" b\t1\n'))
    assert tsv.format == "tsv" and tsv.rows == [
        (2, {"text": '"a" b', "label": "1"})
    ]


@pytest.mark.parametrize(
    "name, text, format_",
    [("a.txt", '{"text": "x"}\n', "jsonl"),
     ("a.txt", "text,label\nx,1\n", "csv"),
     ("a", "text\tlabel\nx,y\t1\n", "tsv"), ("a.data", "text\nx\n", "tsv"),
     ("a.JSON", '{"text": "x"}\n', "jsonl")],
)  # fmt: skip
def test_other_names_are_sniffed(tmp_path, name, text, format_):
    assert read_text_table(write(tmp_path, name, text)).format == format_


@pytest.mark.parametrize("name", ["bom.tsv", "bom.csv", "bom.jsonl"])
def test_a_utf8_byte_order_mark_is_dropped(tmp_path, name):
    text = {"bom.tsv": "text\tlabel\nx\t1\n", "bom.csv": "text,label\nx,1\n",
            "bom.jsonl": '{"text": "x", "label": "1"}\n'}[name]  # fmt: skip
    table = read_text_table(
        write(tmp_path, name, b"\xef\xbb\xbf" + text.encode())
    )
    assert table.columns == ["text", "label"]
    assert table.rows == [(1 if name.endswith("jsonl") else 2,
                           {"text": "x", "label": "1"})]  # fmt: skip


def test_bytes_that_are_not_utf8_name_the_file_line_and_fix(tmp_path):
    data = "text\tlabel\ngood\t1\n".encode() + "café\t0\n".encode("latin-1")
    path = write(tmp_path, "latin.tsv", data)
    with pytest.raises(ValueError) as error:
        read_text_table(path)
    message = str(error.value)
    assert f"{path}, line 3 (byte 21): b'\\xe9" in message
    assert "is not UTF-8" in message and "Re-save the file as UTF-8" in message


def test_a_missing_column_lists_the_columns_found_and_the_flag(tmp_path):
    table = read_text_table(write(tmp_path, "s.tsv", "sentence\tlabel\nx\t1\n"))
    table.require({"sentence": "--text_column", "label": "--label_column"})
    with pytest.raises(ValueError, match=(
        r"s.tsv, line 1: no column `text`; columns found: \['sentence', "
        r"'label'\]. Set --text_column to the column of `text` \(e.g. "
        r"--text_column=sentence\)"
    )):  # fmt: skip
        table.require({"text": "--text_column"})
    jsonl = read_text_table(write(tmp_path, "j.jsonl", '{"a": 1}\n{"b": 2}\n'))
    with pytest.raises(ValueError, match=r"line 2: no column `a`.*\['b'\]"):
        jsonl.require({"a": "--text_column"})


def test_a_csv_read_as_tsv_is_explained(tmp_path):
    table = read_text_table(write(tmp_path, "x.tsv", "text,label\nx,1\n"))
    with pytest.raises(ValueError, match="header is one column.*name a comma"):
        table.require({"text": "--text_column"})


@pytest.mark.parametrize(
    "name, text, message",
    [("c.csv", "text,label\na, b,1\n", r"line 2: 3 cells where the header "
      r"has 2.*Quote each cell that holds a comma"),
     ("n.jsonl", '{"text": "x"}\n[1]\n', "line 2: '\\[1\\]' is not a JSON"),
     ("b.jsonl", '{"text": "x"}\n\n{oops\n', "line 3: not JSON"),
     ("q.csv", 'text,label\n"open,1\n', "line 2: not CSV")],
)  # fmt: skip
def test_bad_rows_name_the_line(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        read_text_table(write(tmp_path, name, text))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="No such file: .*none.csv"):
        read_text_table(str(tmp_path / "none.csv"))


def test_a_utf16_file_is_named_as_such(tmp_path):
    path = write(tmp_path, "u.tsv", "text\tlabel\nx\t1\n".encode("utf-16"))
    with pytest.raises(ValueError, match="UTF-16's byte-order mark.*iconv "
                       "-f utf-16 -t utf-8"):  # fmt: skip
        read_text_table(path)


def test_a_jsonl_string_may_hold_unicode_line_separators(tmp_path):
    row = {"text": "one\u2028two\x85three", "label": "x"}
    path = write(tmp_path, "s.jsonl", json.dumps(row, ensure_ascii=False))
    assert read_text_table(path).rows == [(1, row)]
