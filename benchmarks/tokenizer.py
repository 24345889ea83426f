"""BertTokenizer + BertPreprocessor: speed against the Rust tokenizer, and
peak memory of one big call.

Speed (section "tokenizer"): both sides turn the same raw lines (every
non-empty line of the python3.11-doc reST sources; `--lines`: the first N)
into padded ids of length 128 with the MiniLM vocabulary, in one process,
their outputs checked identical first. Rust:
`tokenizers.BertWordPieceTokenizer(vocab.txt)` with truncation and padding,
`encode_batch` per batch (with its thread pool, and again with
`TOKENIZERS_PARALLELISM=false`), `encode` at batch size 1 (the first
`--batch1_lines`). keras-bert: `BertPreprocessor(BertTokenizer(vocab.txt),
128)` called eagerly per batch, and mapped in a `tf.data` pipeline, as
training runs it. Both sides are credited with the same tokens (WordPiece
tokens before truncation, counted with the Rust tokenizer).

`--memory` (section "tokenizer_memory"): for each of `--memory_lines`, a
fresh process reads that many lines (cycled), warms up on 100, then calls
in one go the tokenizer (ragged ids), the preprocessor (three int32
`(lines, 128)` arrays) or `tf.data` (the preprocessor mapped over
`TextLineDataset(the lines).batch(1024)`, every batch consumed), and
reports its peak resident memory (`ru_maxrss`) above the level before the
call, next to the output's own size.

    python benchmarks/tokenizer.py [--repeats=3] [--batch1_lines=20000]
    python benchmarks/tokenizer.py --memory [--memory_lines=10000,100000]
"""

import itertools
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("repeats", 3, "Timed passes per measurement.")
flags.DEFINE_integer("batch1_lines", 20_000, "Lines for batch size 1.")
flags.DEFINE_integer("lines", None, "The corpus's first N lines; default all.")
flags.DEFINE_bool("memory", False, "Measure peak memory instead of speed.")
flags.DEFINE_list("memory_lines", ["10000", "100000", "1000000"], "Counts.")
flags.DEFINE_list("modes", ["tokenizer", "preprocessor", "tf.data"], "Calls.")
flags.DEFINE_string("worker", None, "Internal: `mode:count` of a worker.")
FLAGS = flags.FLAGS


def tokenizers():
    import keras_bert

    tokenizer = keras_bert.BertTokenizer(f"{common.minilm_dir()}/vocab.txt")
    return tokenizer, keras_bert.BertPreprocessor(
        tokenizer, sequence_length=128
    )


def best_time(run):
    times = []
    for _ in range(FLAGS.repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def speed():
    import numpy as np
    import tensorflow as tf
    from tokenizers import BertWordPieceTokenizer

    loads = [os.getloadavg()[0]]
    vocab = f"{common.minilm_dir()}/vocab.txt"
    lines = common.corpus_lines(limit=FLAGS.lines)
    plain = BertWordPieceTokenizer(vocab, lowercase=True)

    def count(texts):
        encodings = plain.encode_batch(texts, add_special_tokens=False)
        return sum(len(e.ids) for e in encodings)

    batch1 = lines[: FLAGS.batch1_lines]
    tokens, tokens1 = count(lines), count(batch1)
    rust = BertWordPieceTokenizer(vocab, lowercase=True)
    rust.enable_truncation(128, strategy="longest_first")
    rust.enable_padding(length=128)
    tokenizer, preprocessor = tokenizers()
    # The same outputs first: timing two different computations means nothing.
    np.testing.assert_array_equal(
        preprocessor(lines[::50])["token_ids"].numpy(),
        np.array([e.ids for e in rust.encode_batch(lines[::50])]),
    )
    big = [lines[i : i + 1024] for i in range(0, len(lines), 1024)]
    big_tensors = [tf.constant(b) for b in big]
    single = [tf.constant(line) for line in batch1]
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(1024)
    dataset = dataset.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)

    def rust_one_thread():
        # On a loaded machine Rayon's pool can cost more than it saves:
        # time the sequential path too and credit Rust the best.
        previous = os.environ.get("TOKENIZERS_PARALLELISM")
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        [rust.encode_batch(b) for b in big]
        os.environ.pop("TOKENIZERS_PARALLELISM")
        if previous is not None:
            os.environ["TOKENIZERS_PARALLELISM"] = previous

    def ids_only():
        return [plain.encode_batch(b, add_special_tokens=False) for b in big]

    rust_name, ours_name = "Rust `tokenizers`", "keras-bert, eager calls"
    runs = [  # (batch, name, run)
        ("1024", rust_name, lambda: [rust.encode_batch(b) for b in big]),
        ("1024", f"{rust_name}, one thread", rust_one_thread),
        ("1024", ours_name, lambda: [preprocessor(b) for b in big_tensors]),
        ("1024", "keras-bert, `tf.data` map", lambda: [b for b in dataset]),
        ("1", rust_name, lambda: [rust.encode(line) for line in batch1]),
        ("1", ours_name, lambda: [preprocessor(s) for s in single]),
        ("1024", f"{rust_name}, ids only", ids_only),
        (
            "1024",
            "keras-bert, ids only",
            lambda: [tokenizer(b) for b in big_tensors],
        ),
    ]
    for batch, name, run in runs:  # traces, warms up
        if name.startswith("keras-bert") and batch == "1024":
            run()
    preprocessor(single[0])
    rows, best_rust = [], {}
    for batch, name, run in runs:
        kind = "ids" if "ids only" in name else batch
        seconds = best_time(run)
        rate = (tokens1 if batch == "1" else tokens) / seconds
        if name.startswith("Rust"):
            best_rust[kind] = max(rate, best_rust.get(kind, 0))
        rows.append((batch, name, seconds, rate, kind))
        print(f"{batch} {name}: {seconds:.2f} s", flush=True)
    loads.append(os.getloadavg()[0])
    table = [
        f"| {batch} | {name} | {seconds:.2f} | {rate:,.0f} | {rate / best_rust[kind]:.2f}x |"
        for batch, name, seconds, rate, kind in rows
    ]
    words = sum(len(line.split()) for line in lines)
    limit = f" --lines={FLAGS.lines}" if FLAGS.lines else ""
    return (
        "tokenizer",
        f"""## Tokenizer: BertTokenizer + BertPreprocessor vs Rust `tokenizers`

Machine: {common.machine_description()}.
Command: `python benchmarks/tokenizer.py --repeats={FLAGS.repeats} --batch1_lines={FLAGS.batch1_lines}{limit}`.
Work: raw lines to padded `token_ids`/`segment_ids`/`padding_mask` of
length 128, MiniLM vocabulary, outputs checked identical. Batch 1024:
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
""",
    )


def memory_worker(mode, count):
    import tensorflow as tf

    def nbytes(tensor):  # not `numpy().nbytes`: the copy would count
        return tensor.shape.num_elements() * tensor.dtype.size

    lines = itertools.cycle(common.corpus_lines())
    lines = list(itertools.islice(lines, count))
    tokenizer, preprocessor = tokenizers()
    tokenizer(lines[:100]), preprocessor(lines[:100])
    if mode == "tf.data":
        path = os.path.join(tempfile.mkdtemp(), "lines.txt")
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(line + "\n" for line in lines)
        del lines
    before = common.peak_rss_mib()
    if mode == "tokenizer":
        ids = tokenizer(lines)
        output = nbytes(ids.flat_values) + nbytes(ids.row_splits)
    elif mode == "preprocessor":
        output = sum(nbytes(v) for v in preprocessor(lines).values())
    else:
        dataset = tf.data.TextLineDataset(path).batch(1024)
        dataset = dataset.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        output = sum(
            v.numpy().nbytes for batch in dataset for v in batch.values()
        )
    common.print_result([common.peak_rss_mib() - before, output / 2**20])


def memory():
    table = [
        "| call | lines | peak memory above the start (MiB) | output (MiB) | peak / output |",
        "|---|---|---|---|---|",
    ]
    findings = []
    for mode in FLAGS.modes:
        peaks = []
        for count in map(int, FLAGS.memory_lines):
            worker = common.script_command(__file__, f"--worker={mode}:{count}")
            (peak, output), _, _ = common.run_worker(worker)
            streamed = mode == "tf.data"
            ratio = f" | {peak / max(output, 1e-9):.1f} |"
            table.append(
                f"| {mode} | {count:,} | {peak:.0f} | {output:.0f}"
                + (" (streamed) | – |" if streamed else ratio)
            )
            peaks.append(peak)
        if mode == "tf.data":
            span = f"{min(peaks):.0f} and {max(peaks):.0f} MiB"
            findings.append(f"through tf.data the peak stays between {span}")
        else:
            ratio = peak / max(output, 1e-9)
            findings.append(
                f"the {mode}'s peak is {ratio:.1f}× its output at {count:,} lines"
            )
    return "tokenizer_memory", "\n".join(
        [
            "## Tokenizing many lines: peak memory",
            "",
            "`python benchmarks/tokenizer.py --memory`: one fresh process per "
            "row, real lines (python3.11-doc, cycled), MiniLM vocabulary, "
            "sequence length 128; the peak resident memory above the level "
            "after loading the lines, next to the output's own size. A big "
            "eager call runs in chunks of "
            "`keras_bert.text.eager_chunks.EAGER_CHUNK` strings, each "
            "chunk's result copied into the output's buffers as it is made "
            "and then dropped. Here " + "; ".join(findings) + ". "
            f"{common.machine_description()}.",
            "",
            *table,
        ]
    )


def main(argv):
    del argv
    if FLAGS.worker:
        mode, count = FLAGS.worker.split(":")
        return memory_worker(mode, int(count))
    common.publish(*(memory() if FLAGS.memory else speed()))


if __name__ == "__main__":
    app.run(main)
