"""benchmarks/throughput.py's races: what several share (the worker
runner, the MiniLM classifier and SST-2 features, the alternating
windows)."""

import os
import time

from absl import flags

from benchmarks import common

FLAGS = flags.FLAGS
# The entry script: the workers run it (`--worker=...`).
SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "throughput.py",
)
PRECISIONS = {"fp32": "float32", "bf16": "mixed_bfloat16"}


def run(name, race, *arguments):
    """A worker's tokens/s, or NaN (and its output printed) if it failed."""
    command = common.script_command(
        SCRIPT, f"--worker={name}", f"--race={race}", *arguments,
        *common.flag_values("steps", "warmup", "seconds"),
    )  # fmt: skip
    value, _, output = common.run_worker(command, check=False)
    if value is None:
        print(f"{name} {arguments} failed:\n{output[-2000:]}")
    print(f"{name} {arguments}: {value} tokens/s", flush=True)
    return float("nan") if value is None else value


def classifier(optimizations=None, total_steps=100):
    """MiniLM as a 2-class classifier, compiled as the recipe compiles it."""
    import keras_bert
    from keras_bert import training

    options = {} if optimizations is None else {"optimizations": optimizations}
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=2, **options
    )
    schedule = training.WarmupLinearDecay(2e-5, total_steps, total_steps // 10)
    return model, training.create_adamw(schedule)


def sst2():
    """SST-2 train's features (MiniLM's tokenizer, 128) and labels."""
    import keras_bert
    from keras_bert.fine_tuning.glue.dataset import preprocess_glue
    from keras_bert.fine_tuning.glue.loader import load_glue

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=128)
    train = load_glue("sst2", "train", FLAGS.glue_dir)
    return preprocess_glue("sst2", train, preprocessor), train["label"]


def alternating_windows(steps, rounds, window):
    """Seconds per step of each of `steps` (`{name: (train_function,
    iterator)}`, traced and warm), timed in `rounds` rounds of one window
    of `window` steps each, the names alternating."""
    seconds = {name: [] for name in steps}
    for _ in range(rounds):
        for name, (train_function, iterator) in steps.items():
            start = time.perf_counter()
            for _ in range(window):
                logs = train_function(iterator)
            [float(v) for v in logs.values()]  # the window's steps all ran
            seconds[name].append((time.perf_counter() - start) / window)
    return seconds
