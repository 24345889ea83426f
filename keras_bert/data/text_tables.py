"""Reading a user's table of texts: JSONL, TSV or CSV, one row a line.

The one reader of the files users bring to `recipes/classify.py`,
`recipes/multiple_choice.py` and `recipes/embeddings.py`. The format comes
from the file's extension:

- `.jsonl` or `.json`: one JSON object a line (blank lines skipped); its
  fields are the columns.
- `.tsv`: tab-separated, a header row naming the columns; cells are read
  as they are, quotes included (no quoting, as GLUE's TSV files are).
- `.csv`: comma-separated, a header row; RFC 4180 quoting (Python's `csv`
  module): a cell holding commas, quotes or newlines is quoted
  (`"a, ""b"" and c"`).

Any other name (`.txt`, none) is sniffed: a first non-blank character
`{` means JSONL; else a tab in the header line means TSV, a comma CSV
(a header of one column: TSV). The bytes are UTF-8, with or without a
byte-order mark (`utf-8-sig`: Excel's "CSV UTF-8" and Notepad write one).
Every path goes through `tf.io.gfile` (local, `gs://`, `hdfs://`, ...).
"""

import csv
import dataclasses
import io
import json

from keras_bert import files

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".tsv": "tsv", ".csv": "csv"}
_DIALECTS = {
    "tsv": {"delimiter": "\t", "quoting": csv.QUOTE_NONE},
    "csv": {"delimiter": ",", "strict": True},
}


@dataclasses.dataclass
class TextTable:
    """The rows of one file, each a dict from column name to cell.

    Attributes:
        path: str. Where the rows came from, for messages.
        format: str. `"jsonl"`, `"tsv"` or `"csv"`.
        columns: list of str. The header (TSV, CSV), or every field of
            the rows in first-seen order (JSONL).
        rows: list of `(line, row)`: the 1-based line a row starts on, and
            the row (`dict`; a TSV/CSV row short of cells gives `None`).
    """

    path: str
    format: str
    columns: list
    rows: list

    def require(self, names):
        """Raises unless every row has the columns `names` maps to flags.

        Args:
            names: dict from a column the reader needs to the flag (or
                argument) that names it, e.g. `{"sentence":
                "--text_column"}`; `None` where no flag names it.

        Raises:
            ValueError: naming the file (and, JSONL, the line), the missing
                column, the columns found and the flag to set.
        """
        for line, row in self.rows if self.format == "jsonl" else [(1, None)]:
            found = list(row) if row is not None else self.columns
            missing = [(n, flag) for n, flag in names.items() if n not in found]
            if not missing:
                continue
            listed = ", ".join(f"`{name}`" for name, _ in missing)
            plural = "s" if len(missing) > 1 else ""
            sets = [
                f"{flag} to the column of `{n}`" for n, flag in missing if flag
            ]
            flag = next((flag for _, flag in missing if flag), None)
            example = found[0] if found else "text"
            fix = (
                f"Set {' and '.join(sets)} (e.g. {flag}={example}), or "
                f"rename the column{plural}."
                if sets
                else f"Rename the column{plural}."
            )
            raise ValueError(
                f"{self.path}, line {line}: no column{plural} {listed}; "
                f"columns found: {found}. {fix}" + header_hint(found)
            )


def table_format(path, text):
    """`"jsonl"`, `"tsv"` or `"csv"`: by extension, else sniffed (module
    docstring)."""
    name = str(path).lower()
    for extension, format_ in FORMATS.items():
        if name.endswith(extension):
            return format_
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return "jsonl"
    header = stripped.split("\n", 1)[0]
    return "csv" if "," in header and "\t" not in header else "tsv"


def decode_text(path, data):
    """`data` (bytes) decoded as UTF-8, a leading byte-order mark dropped.

    Raises:
        ValueError: naming the file, the line, the byte offset and the
            bytes that are not UTF-8, and the fix.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        bad = data[error.start : error.end + 3]
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        raise ValueError(
            f"{path}, line {line} (byte {error.start}): {bad!r} is not UTF-8 "
            f"({error.reason}"
            + ("; the file starts with UTF-16's byte-order mark" * utf16)
            + "). Re-save the file as UTF-8 (e.g. `iconv -f "
            f"{'utf-16' if utf16 else 'latin1'} -t utf-8 in.tsv > "
            "out.tsv`, or your editor's or spreadsheet's 'UTF-8' option)."
        ) from None


def read_text_table(path):
    """Reads a JSONL, TSV or CSV file of rows (module docstring).

    Args:
        path: str. Any path `tf.io.gfile` reads.

    Returns:
        A `TextTable`.

    Raises:
        ValueError: a missing file, bytes that are not UTF-8, a JSONL line
            that is not a JSON object, a row with more cells than the
            header; each naming the file, the line and the fix.

    Example:
    ```python
    table = read_text_table("glue/SST-2/dev.tsv")
    table.columns  # ['sentence', 'label']
    table.rows[0]  # (2, {'sentence': "it 's a charming ...", 'label': '1'})
    ```
    """
    path = str(path)
    if not files.exists(path):
        raise ValueError(f"No such file: {path}. Pass an existing file.")
    text = decode_text(path, files.read_bytes(path))
    format_ = table_format(path, text)
    if format_ == "jsonl":
        rows = _jsonl_rows(path, text)
        columns = list(dict.fromkeys(name for _, row in rows for name in row))
    else:
        columns, rows = _delimited_rows(path, text, format_)
    return TextTable(path, format_, columns, rows)


def _jsonl_rows(path, text):
    rows = []
    # Split at "\n" only: a JSON string may hold U+2028 and the like.
    for line, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{path}, line {line}: not JSON ({error}). A JSONL file "
                'holds one object per line, e.g. {"text": "...", "label": '
                '"..."}; for a table with a header row name the file .tsv '
                "or .csv."
            ) from None
        if not isinstance(row, dict):
            raise ValueError(
                f"{path}, line {line}: {raw.strip()[:60]!r} is not a JSON "
                'object. Write one object per line, e.g. {"text": ...}.'
            )
        rows.append((line, row))
    return rows


def _delimited_rows(path, text, format_):
    reader = csv.reader(io.StringIO(text, newline=""), **_DIALECTS[format_])
    header, rows = None, []
    start = 1
    try:
        for cells in reader:
            if any(cell.strip() for cell in cells):
                if header is None:
                    header = [cell.strip() for cell in cells]
                else:
                    rows.append(
                        (start, _row(path, start, header, cells, format_))
                    )
            start = reader.line_num + 1
    except csv.Error as error:
        raise ValueError(
            f"{path}, line {start}: not {format_.upper()} ({error}). Check "
            "the quoting of that row."
        ) from None
    return header or [], rows


def _row(path, line, header, cells, format_):
    extra = [cell for cell in cells[len(header) :] if cell.strip()]
    if extra:
        fix = (
            'Quote each cell that holds a comma ("a, b"; RFC 4180, as '
            "spreadsheets save CSV)."
            if format_ == "csv"
            else "Remove the tabs inside that row's cells."
        )
        raise ValueError(
            f"{path}, line {line}: {len(cells)} cells where the header has "
            f"{len(header)} ({header}); extra: {extra[:3]}. {fix}"
        )
    cells = cells + [None] * (len(header) - len(cells))
    return dict(zip(header, cells))


def header_hint(found):
    """A sentence for a header read as one column holding separators."""
    if len(found) == 1 and ("," in found[0] or "\t" in found[0]):
        return (
            f" The header is one column, {found[0]!r}: name a comma-"
            "separated file .csv and a tab-separated one .tsv."
        )
    return ""
