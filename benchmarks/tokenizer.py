"""Tokens per second: BertTokenizer + BertPreprocessor vs the Rust tokenizer.

Both sides turn the same raw lines into padded `token_ids`, `segment_ids`
and `padding_mask` of length 128 with the MiniLM vocabulary, in one
process, with the same batch sizes:

- Rust: `tokenizers.BertWordPieceTokenizer(vocab.txt)` with truncation and
  padding to 128; `encode_batch` per batch (with its thread pool, and
  again with `TOKENIZERS_PARALLELISM=false`), `encode` at batch size 1.
- keras-bert: `BertPreprocessor(BertTokenizer(vocab.txt), 128)` called
  eagerly per batch, and the same layer mapped in a `tf.data` pipeline
  (`batch` then `map(num_parallel_calls=AUTOTUNE)`), as training runs it.

The corpus is every non-empty line of the python3.11-doc reST sources;
batch size 1 takes the first `--batch1_lines`. Tokens are WordPiece
tokens before truncation, counted once with the Rust tokenizer, so both
sides are credited with the same work; each figure is the best of
`--repeats` passes; the outputs are checked identical before timing.

    python benchmarks/tokenizer.py [--repeats=3] [--batch1_lines=20000]
        [--lines=N]

Writes the "tokenizer" section of benchmarks/RESULTS.md.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("repeats", 3, "Timed passes per measurement.")
flags.DEFINE_integer("batch1_lines", 20_000, "Lines for batch size 1.")
flags.DEFINE_integer("lines", None, "The corpus's first N lines; default all.")
flags.DEFINE_integer("sequence_length", 128, "Packed length.")
FLAGS = flags.FLAGS


def best_time(run, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf
    import tokenizers

    import keras_bert

    loads = [os.getloadavg()[0]]
    vocab, length = f"{common.minilm_dir()}/vocab.txt", FLAGS.sequence_length
    lines = common.corpus_lines(limit=FLAGS.lines)
    words = sum(len(line.split()) for line in lines)
    plain = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)

    def count(texts):
        encoded = plain.encode_batch(texts, add_special_tokens=False)
        return sum(len(e.ids) for e in encoded)

    batch1 = lines[: FLAGS.batch1_lines]
    tokens, tokens1 = count(lines), count(batch1)
    rust = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
    rust.enable_truncation(length, strategy="longest_first")
    rust.enable_padding(length=length)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocab), sequence_length=length
    )
    # The same outputs first: timing two different computations means nothing.
    sample = lines[::50]
    np.testing.assert_array_equal(
        preprocessor(sample)["token_ids"].numpy(),
        np.array([e.ids for e in rust.encode_batch(sample)]),
    )
    big = [lines[i : i + 1024] for i in range(0, len(lines), 1024)]
    big_tensors = [tf.constant(b) for b in big]
    single = [tf.constant(line) for line in batch1]
    dataset = (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(1024)
        .map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )

    def rust_one_thread():
        # On a loaded machine Rayon's pool can cost more than it saves:
        # time the sequential path too and credit Rust the best.
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        try:
            for batch in big:
                rust.encode_batch(batch)
        finally:
            del os.environ["TOKENIZERS_PARALLELISM"]

    runs = [
        ("1024", "Rust `tokenizers`", lambda: [rust.encode_batch(b) for b in big], tokens),  # fmt: skip
        ("1024", "Rust `tokenizers`, one thread", rust_one_thread, tokens),
        ("1024", "keras-bert, eager calls", lambda: [preprocessor(b) for b in big_tensors], tokens),  # fmt: skip
        ("1024", "keras-bert, `tf.data` map", lambda: [_ for _ in dataset], tokens),  # fmt: skip
        ("1", "Rust `tokenizers`", lambda: [rust.encode(line) for line in batch1], tokens1),  # fmt: skip
        ("1", "keras-bert, eager calls", lambda: [preprocessor(s) for s in single], tokens1),  # fmt: skip
        ("1024", "Rust `tokenizers`, ids only", lambda: [plain.encode_batch(b, add_special_tokens=False) for b in big], tokens),  # fmt: skip
        ("1024", "keras-bert, ids only", lambda: [preprocessor.tokenizer(b) for b in big_tensors], tokens),  # fmt: skip
    ]
    for batch_size, name, run, _ in runs:  # trace, warm up
        if name.startswith("keras-bert") and batch_size == "1024":
            run()
    preprocessor(single[0])
    rows = []
    for batch_size, name, run, work in runs:
        seconds = best_time(run, FLAGS.repeats)
        rows.append((batch_size, name, seconds, work / seconds))
        print(f"{batch_size} {name}: {seconds:.2f} s", flush=True)
    loads.append(os.getloadavg()[0])

    def kind(batch_size, name):
        return "ids" if "ids only" in name else batch_size

    rust_rate = {}  # the best Rust figure per kind of work
    for batch_size, name, _, rate in rows:
        if name.startswith("Rust"):
            key = kind(batch_size, name)
            rust_rate[key] = max(rate, rust_rate.get(key, 0))
    table = [
        f"| {b} | {name} | {seconds:.2f} | {rate:,.0f} | "
        f"{rate / rust_rate[kind(b, name)]:.2f}x |"
        for b, name, seconds, rate in rows
    ]
    markdown = f"""## Tokenizer: BertTokenizer + BertPreprocessor vs Rust `tokenizers`

Machine: {common.machine_description()}.
Command: `python benchmarks/tokenizer.py --repeats={FLAGS.repeats} \
--batch1_lines={FLAGS.batch1_lines}{f" --lines={FLAGS.lines}" if FLAGS.lines else ""}`.
Work: raw lines to padded `token_ids`/`segment_ids`/`padding_mask` of
length {length}, MiniLM vocabulary, outputs checked identical. Batch 1024:
all {len(lines):,} non-empty lines of the python3.11-doc reST sources
({words:,} words, {tokens:,} WordPiece tokens). Batch 1: the first
{len(batch1):,} lines ({tokens1:,} tokens). "ids only" rows tokenize
without packing (Rust: `encode_batch(add_special_tokens=False)`, no
padding; keras-bert: `BertTokenizer` alone, ragged ids). Best of
{FLAGS.repeats} passes. Load average (1 min) at the start and the end:
{common.listed(loads, "{:.1f}")}, {common.load_note(loads, os.cpu_count())}
"vs Rust" divides by the best Rust row of the same work. The Rust side
pays for building Python `Encoding` objects, as any Python caller does.

| batch | implementation | seconds | tokens/s | vs Rust |
|---|---|---|---|---|
{chr(10).join(table)}
"""
    common.update_results("tokenizer", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
