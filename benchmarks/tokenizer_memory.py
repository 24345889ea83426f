"""Peak memory of tokenizing and packing many lines in one call.

For each line count, a fresh process reads that many real lines (the
python3.11-doc reST sources, cycled), warms up on 100 lines, then calls in
one go `BertTokenizer(lines)` (ragged ids), `BertPreprocessor(tokenizer,
128)(lines)` (three int32 `(lines, 128)` arrays), or maps the preprocessor
over `TextLineDataset(file of the lines).batch(1024)` (tf.data, every
batch consumed), and reports its peak resident memory (`ru_maxrss`) above
the level before the call, next to the output's own size: bounded means
the extra memory stays near the output's size, or flat through tf.data.

    python benchmarks/tokenizer_memory.py [--lines=10000,100000,1000000]

Writes the "tokenizer_memory" section of benchmarks/RESULTS.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_list("lines", ["10000", "100000", "1000000"], "Line counts.")
flags.DEFINE_list(
    "modes", ["tokenizer", "preprocessor", "tf.data"], "What to measure."
)
flags.DEFINE_string("worker", None, "Internal: `mode:count` for one worker.")
FLAGS = flags.FLAGS


def nbytes(tensor):
    # Not `tensor.numpy().nbytes`: the copy of a big output would count.
    return tensor.shape.num_elements() * tensor.dtype.size


def run_worker(mode, count):
    import itertools
    import tempfile

    import tensorflow as tf

    import keras_bert

    lines = list(itertools.islice(itertools.cycle(common.corpus_lines()), count))  # fmt: skip
    tokenizer = keras_bert.BertTokenizer(f"{common.minilm_dir()}/vocab.txt")
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=128)
    tokenizer(lines[:100])
    preprocessor(lines[:100])
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
        output = sum(v.numpy().nbytes for b in dataset for v in b.values())
    common.print_result(
        {
            "mode": mode,
            "lines": count,
            "peak_above_start_mib": common.peak_rss_mib() - before,
            "output_mib": output / 2**20,
        }
    )


def main(argv):
    del argv
    if FLAGS.worker:
        mode, count = FLAGS.worker.split(":")
        return run_worker(mode, int(count))
    rows = [
        common.run_worker(common.script_command(__file__, f"--worker={m}:{n}"))[0]  # fmt: skip
        for m in FLAGS.modes
        for n in FLAGS.lines
    ]
    table = [
        "| call | lines | peak memory above the start (MiB) "
        "| output (MiB) | peak / output |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        streamed = row["mode"] == "tf.data"
        ratio = row["peak_above_start_mib"] / max(row["output_mib"], 1e-9)
        table.append(
            f"| {row['mode']} | {row['lines']:,} "
            f"| {row['peak_above_start_mib']:.0f} "
            f"| {row['output_mib']:.0f}{' (streamed)' if streamed else ''} "
            f"| {'–' if streamed else f'{ratio:.1f}'} |"
        )
    findings = []
    for mode in FLAGS.modes:
        mine = [r for r in rows if r["mode"] == mode]
        peaks = [r["peak_above_start_mib"] for r in mine]
        if mode == "tf.data":
            findings.append(
                f"through tf.data the peak stays between {min(peaks):.0f} "
                f"and {max(peaks):.0f} MiB from {mine[0]['lines']:,} to "
                f"{mine[-1]['lines']:,} lines"
            )
        else:
            ratio = peaks[-1] / max(mine[-1]["output_mib"], 1e-9)
            findings.append(
                f"the {mode}'s peak is {ratio:.1f}× its output at "
                f"{mine[-1]['lines']:,} lines"
            )
    markdown = "\n".join(
        [
            "## Tokenizing many lines: peak memory",
            "",
            "`python benchmarks/tokenizer_memory.py`: one fresh process per "
            "row, real lines (python3.11-doc, cycled), MiniLM vocabulary, "
            "sequence length 128; the peak resident memory above the level "
            "after loading the lines, next to the output's own size. A big "
            "eager call runs in chunks of "
            "`keras_bert.text.bert_tokenizer.EAGER_CHUNK` strings, each "
            "chunk's result copied into the output's buffers as it is made "
            "and then dropped. Here " + "; ".join(findings) + ". "
            f"{common.machine_description()}.",
            "",
            *table,
        ]
    )
    print(markdown)
    common.update_results("tokenizer_memory", markdown)


if __name__ == "__main__":
    app.run(main)
