"""Peak memory of tokenizing and packing many lines in one call.

For each line count, a fresh process reads that many real lines (the
Debian `python3.11-doc` reST sources, cycled past their ~140k lines),
warms the tokenizer up on 100 lines, then calls, in one go:

  tokenizer     `BertTokenizer(minilm vocab)(lines)` (ragged ids)
  preprocessor  `BertPreprocessor(tokenizer, 128)(lines)` (three int32
                `(lines, 128)` arrays)
  tf.data       the preprocessor mapped over
                `TextLineDataset(file of the lines).batch(1024)`, every
                batch consumed

and reports the process's peak resident memory (`ru_maxrss`) above the
level after loading the lines and warming up, next to the size of the
output itself. Bounded means the extra memory stays near the output's
size (or, through tf.data, flat) however many lines there are.

    python benchmarks/tokenizer_memory.py [--lines=10000,100000,1000000]

Prints a Markdown table and writes it to the "tokenizer_memory" section
of benchmarks/RESULTS.md.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_list("lines", ["10000", "100000", "1000000"], "Line counts.")
flags.DEFINE_list(
    "modes", ["tokenizer", "preprocessor", "tf.data"], "What to measure."
)
flags.DEFINE_string("child", None, "Internal: `mode:count` for one child.")
FLAGS = flags.FLAGS


def _peak_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _nbytes(tensor):
    # Not `tensor.numpy().nbytes`: `numpy()` copies, and the copy of a
    # 1M-line output would count in the peak.
    return tensor.shape.num_elements() * tensor.dtype.size


def child(mode, count):
    import itertools
    import tempfile

    import tensorflow as tf

    import keras_bert
    from benchmarks import common
    from benchmarks.tokenizer import minilm_vocab

    corpus = common.corpus_lines()
    lines = list(itertools.islice(itertools.cycle(corpus), count))
    tokenizer = keras_bert.BertTokenizer(minilm_vocab())
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=128)
    tokenizer(lines[:100])
    preprocessor(lines[:100])
    before = _peak_mib()
    if mode == "tokenizer":
        ids = tokenizer(lines)
        output = _nbytes(ids.flat_values) + _nbytes(ids.row_splits)
    elif mode == "preprocessor":
        outputs = preprocessor(lines)
        output = sum(_nbytes(v) for v in outputs.values())
    else:
        path = os.path.join(tempfile.mkdtemp(), "lines.txt")
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(line + "\n" for line in lines)
        del lines
        before = _peak_mib()
        dataset = tf.data.TextLineDataset(path).batch(1024)
        dataset = dataset.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        output = 0
        for batch in dataset:
            output += sum(v.numpy().nbytes for v in batch.values())
    return {
        "mode": mode,
        "lines": count,
        "peak_above_start_mib": _peak_mib() - before,
        "output_mib": output / 2**20,
        "start_mib": before,
    }


def main(argv):
    del argv
    if FLAGS.child:
        mode, count = FLAGS.child.split(":")
        common.print_result(child(mode, int(count)))
        return
    rows = []
    for mode in FLAGS.modes:
        for count in map(int, FLAGS.lines):
            completed = subprocess.run(
                [sys.executable, __file__, f"--child={mode}:{count}"],
                capture_output=True,
                text=True,
                check=False,
            )
            row = common.worker_result(completed.stdout)
            if row is None:
                raise RuntimeError(completed.stderr[-3000:])
            rows.append(row)
    table = [
        "| call | lines | peak memory above the start (MiB) "
        "| output (MiB) | peak / output |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = row["peak_above_start_mib"] / max(row["output_mib"], 1e-9)
        output = (
            f"{row['output_mib']:.0f} (streamed)"
            if row["mode"] == "tf.data"
            else f"{row['output_mib']:.0f}"
        )
        table.append(
            f"| {row['mode']} | {row['lines']:,} "
            f"| {row['peak_above_start_mib']:.0f} | {output} "
            f"| {'–' if row['mode'] == 'tf.data' else f'{ratio:.1f}'} |"
        )
    markdown = "\n".join(
        [
            "## Tokenizing many lines: peak memory (issue 20)",
            "",
            "`python benchmarks/tokenizer_memory.py`: one fresh process per "
            "row, real lines (python3.11-doc, cycled), MiniLM vocabulary, "
            "sequence length 128; the peak resident memory above the level "
            "after loading the lines, next to the output's own size. A big "
            "eager call runs in chunks of "
            "`keras_bert.text.bert_tokenizer.EAGER_CHUNK` strings, each "
            "chunk's result copied into the output's buffers as it is made "
            "and then dropped (TensorFlow takes those buffers as the "
            "tensors' memory, without a copy), so the peak is the output "
            "plus one chunk's work; through tf.data it is flat. "
            f"{common.machine_description()}.",
            "",
            *table,
        ]
    )
    print(markdown)
    common.update_results("tokenizer_memory", markdown)


if __name__ == "__main__":
    app.run(main)
