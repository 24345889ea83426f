r"""Learns a BERT WordPiece vocabulary from text files.

    python recipes/build_vocab.py --input='corpus/*.txt,more.txt.gz' \
        --vocab_size=30522 --output=vocab.txt

Each line of each input file is one text (`.gz` files are read compressed).
Words are split by `keras_bert.BertTokenizer`'s own normaliser, so the
vocabulary sees exactly what tokenization will; tensorflow-text's WordPiece
learner (the library behind `bert_vocab_from_dataset`) picks the pieces.
The vocabulary starts with `[PAD]`, `--reserved_tokens` `[unusedN]` slots,
`[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`.

Flags:
    --input: comma-separated files or glob patterns.
    --output: path of the `vocab.txt` to write.
    --vocab_size: target vocabulary size (the learner may stop short).
    --lowercase: learn an uncased vocabulary (default true).
    --strip_accents: `true`/`false`; default follows --lowercase.
    --reserved_tokens: `[unusedN]` slots after `[PAD]` (default 0).
    --held_out_fraction: keep this fraction of the lines (every k-th) out of
        learning and report the `[UNK]` rate on them (default 0).

Writes OUTPUT and OUTPUT.json: the resolved flags, line, word and token
counts, the vocabulary size and, with --held_out_fraction, the `[UNK]` rate.
"""

import time

from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert.data import expand_input_files
from keras_bert.data import text_lines
from keras_bert.text import vocabulary as vocabulary_lib
from keras_bert.validation import check_rate

FLAGS = flags.FLAGS

flags.DEFINE_list("input", None, "Files or glob patterns, comma-separated.")
flags.DEFINE_string("output", None, "Path of the vocab.txt to write.")
flags.DEFINE_integer("vocab_size", 30522, "Target vocabulary size.")
flags.DEFINE_boolean("lowercase", True, "Learn an uncased vocabulary.")
flags.DEFINE_enum(
    "strip_accents", None, ["true", "false"], "Default: as --lowercase."
)
flags.DEFINE_integer("reserved_tokens", 0, "[unusedN] slots after [PAD].")
flags.DEFINE_float(
    "held_out_fraction", 0.0, "Lines kept out to measure the [UNK] rate."
)
flags.mark_flags_as_required(["input", "output"])


def read_lines(patterns):
    paths = expand_input_files(",".join(patterns))
    lines = [line for path in paths for line in text_lines(path) if line]
    return paths, lines


def split_held_out(lines, fraction):
    if fraction <= 0:
        return lines, []
    check_rate("--held_out_fraction", fraction)
    every = max(int(round(1 / fraction)), 2)
    return (
        [line for i, line in enumerate(lines) if i % every],
        lines[::every],
    )


def main(argv):
    del argv
    strip_accents = (
        None if FLAGS.strip_accents is None else FLAGS.strip_accents == "true"
    )
    config = dict(
        input=FLAGS.input,
        output=FLAGS.output,
        vocab_size=FLAGS.vocab_size,
        lowercase=FLAGS.lowercase,
        strip_accents=strip_accents,
        reserved_tokens=FLAGS.reserved_tokens,
        held_out_fraction=FLAGS.held_out_fraction,
    )
    logging.info("Configuration: %s", config)
    start = time.perf_counter()
    paths, lines = read_lines(FLAGS.input)
    train, held_out = split_held_out(lines, FLAGS.held_out_fraction)
    vocabulary = keras_bert.text.build_vocabulary(
        train,
        FLAGS.vocab_size,
        lowercase=FLAGS.lowercase,
        strip_accents=strip_accents,
        reserved_tokens=FLAGS.reserved_tokens,
    )
    vocabulary_lib.save_vocabulary(vocabulary, FLAGS.output)
    results = dict(
        config=config,
        files=len(paths),
        lines=len(train),
        words=sum(len(line.split()) for line in train),
        vocabulary_size=len(vocabulary),
        seconds=round(time.perf_counter() - start, 1),
    )
    if held_out:
        tokenizer = keras_bert.BertTokenizer(
            vocabulary, lowercase=FLAGS.lowercase, strip_accents=strip_accents
        )
        ids = tokenizer(held_out).flat_values.numpy()
        results.update(
            held_out_lines=len(held_out),
            held_out_tokens=int(ids.size),
            held_out_unk_rate=float((ids == tokenizer.unk_token_id).mean()),
        )
    keras_bert.files.write_json(FLAGS.output + ".json", results)
    logging.info("Wrote %s: %s", FLAGS.output, results)


if __name__ == "__main__":
    app.run(main)
