"""Tags for a file of sentences (`recipes/ner.py --predict_file`).

The file is raw text, one sentence (or any text) a line, or CoNLL
columns, one word a line (`conll.read_conll`; tags, if any, ignored).
`write_ner_predictions` writes one JSON line per sentence: its words, a
tag per word and the entities, with character offsets for raw text
(`entities.tag_texts`: the words and windows of the exported model) and
word offsets for CoNLL words (`NerFineTuning.predict_tags`: the words
and windows of training, documents together with `document_context`).
"""

from keras_bert import files
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.fine_tuning.ner.entities import tag_texts
from keras_bert.fine_tuning.ner.entities import text_entities
from keras_bert.fine_tuning.predictions import check_predict_file
from keras_bert.fine_tuning.predictions import write_jsonl
from keras_bert.text.bert_preprocessor import BertPreprocessor
from keras_bert.training.ner_metrics import get_entities

# How `read_sentences` reads a file.
FORMATS = ("auto", "text", "conll")
_DOCSTART = "-DOCSTART-"


def looks_like_conll(text):
    """Whether `text` reads as CoNLL columns rather than a text a line.

    CoNLL: a `-DOCSTART-` line, or blank lines between blocks of token
    lines, some block of several lines, every line with the same number
    of columns. A text a line has lines of varied word counts and rarely
    a blank line between them.
    """
    rows = [line.split() for line in text.splitlines()]
    if any(row and row[0] == _DOCSTART for row in rows):
        return True
    filled = [i for i, row in enumerate(rows) if row]
    if not filled:
        return False
    gap = any(not row for row in rows[filled[0] : filled[-1]])
    block = any(rows[i] and rows[i + 1] for i in range(len(rows) - 1))
    return gap and block and len({len(rows[i]) for i in filled}) == 1


def read_sentences(path, format="auto"):
    """The sentences of a file to tag.

    Args:
        path: str. Any path `tf.io.gfile` reads (UTF-8).
        format: str. `"text"`: one text a line (blank lines skipped);
            `"conll"`: CoNLL columns, the word first, a blank line
            between sentences (`read_conll`, its tags ignored); `"auto"`
            (the default): CoNLL if the file `looks_like_conll`, else text.

    Returns:
        A dict: `format` (`"text"` or `"conll"`) and `texts` (list of
        str), or for CoNLL `read_conll`'s `words`, `document` and `line`.

    Raises:
        ValueError: naming `path`, when it does not exist, holds no
            sentence, or `format` is not one of `FORMATS`.

    Example:
    ```python
    read_sentences("new.txt")  # {"format": "text", "texts": [...]}
    read_sentences("conll2003/test.txt")["words"][0]  # ["SOCCER", "-", ...]
    ```
    """
    if format not in FORMATS:
        raise ValueError(
            f"Unknown format {format!r} for {path}. Pass one of {FORMATS}."
        )
    check_predict_file(path)
    text = files.read_text(path).removeprefix("\ufeff")
    if format == "auto":
        format = "conll" if looks_like_conll(text) else "text"
    if format == "text":
        texts = [line for line in text.splitlines() if line.strip()]
        if not texts:
            raise ValueError(f"{path} has no sentences (one per line).")
        return {"format": "text", "texts": texts}
    data = read_conll(path, tag_column=None)
    if not data["words"]:
        raise ValueError(
            f"{path} holds no sentence: it has no token line. Give it a "
            "word per line (blank lines between sentences), or one "
            "sentence per line with format 'text' (--predict_format=text)."
        )
    return {"format": "conll", **data}


def write_ner_predictions(job, model, sentences, output_file):
    """Tags every sentence of `sentences` and writes `output_file`.

    One JSON line per sentence, in input order. Raw text: `text`, `words`
    (as the exported model cuts them), `tags` (one per word) and
    `entities` (`entity`, `type`, `start` and `end` in code points,
    `text[start:end] == entity`, `score`). CoNLL: `line` (of the first
    word in the file), `words`, `tags` and `entities` (`entity`, the words
    joined by spaces, `type`, `start` and `end` word indexes, `end`
    excluded, and `score`). A score is the mean of the entity's words'
    tag probabilities.

    Args:
        job: the `NerFineTuning` the model was trained by (its tokenizer,
            labels, `sequence_length`, `stride`, `document_context`,
            `eval_batch_size`).
        model: the trained tagger.
        sentences: `read_sentences(predict_file)`.
        output_file: str. The JSONL to write (any `tf.io.gfile` path).

    Returns:
        The number of predictions written.

    Example:
    ```python
    result = keras_bert.fine_tuning.run_fine_tuning(job, "runs/ner")
    write_ner_predictions(
        job, result.model, read_sentences("new.txt"), "new.jsonl"
    )
    ```
    """
    if sentences["format"] == "text":
        rows = _text_rows(job, model, sentences["texts"])
    else:
        rows = _word_rows(job, model, sentences)
    return write_jsonl(output_file, rows)


def _text_rows(job, model, texts):
    preprocessor = BertPreprocessor(job.tokenizer, job.sequence_length)
    tagged = tag_texts(
        model, preprocessor, texts, job.labels, job.stride, job.eval_batch_size
    )
    for text, row in zip(texts, tagged):
        entities = text_entities(text, row)
        for entity in entities:
            entity["score"] = round(entity["score"], 6)
        yield {
            "text": text,
            "words": [text[start:end] for start, end in row["spans"]],
            "tags": row["tags"],
            "entities": entities,
        }


def _word_rows(job, model, sentences):
    documents = sentences["document"] if job.document_context else None
    tags, scores = job.predict_tags(
        model, sentences["words"], documents, scores=True
    )
    for line, words, row_tags, row_scores in zip(
        sentences["line"], sentences["words"], tags, scores
    ):
        entities = [
            {
                "entity": " ".join(words[first : last + 1]),
                "type": entity_type,
                "start": first,
                "end": last + 1,
                "score": round(
                    float(sum(row_scores[first : last + 1]))
                    / (last + 1 - first),
                    6,
                ),
            }
            for entity_type, first, last in get_entities(row_tags)
        ]
        yield {
            "line": line,
            "words": words,
            "tags": row_tags,
            "entities": entities,
        }
