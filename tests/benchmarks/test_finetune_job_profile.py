"""benchmarks/finetune_job.py --race=profile: its trace window, op tables
and the section it writes, from made-up records (no timing)."""

from benchmarks.finetune import profile


def test_the_trace_window_is_in_the_middle_and_fits_the_epoch():
    assert profile.trace_window(217, 20) == (98, 118)
    assert profile.trace_window(10, 20) == (1, 9)
    assert profile.trace_window(2, 20) == (1, 1)  # nothing traced


def test_op_table_sums_op_kinds_and_leaves_idle_out():
    rows = [("MatMul", 3.0), ("IDLE", 9.0), ("Erfc", 1.0), ("MatMul", 1.0)]
    table, total = profile.op_table(rows, top=1)
    assert total == 5.0
    assert table == [("MatMul", 4.0, 0.8)]


def _section(records):
    return "\n".join(profile.profile_summary(records))


def _record(step_ms, widths, **extra):
    steps = len(widths)
    record = {
        "phases": {
            "imports": 5.0,
            "model": 2.0,
            "tokenize": 1.0,
            "train": sum(step_ms) / 1000,
            "evaluate": 3.0,
        },
        "widths": widths,
        "step_seconds": [ms / 1000 for ms in step_ms],
        "trace_window": [1, 2],
        "traced_op_seconds": 0.5,
        "ops": [["MatMul", 0.4, 0.8], ["Erfc", 0.1, 0.2]],
        "dev_accuracy": 0.83,
        "num_train_examples": 32 * steps,
        "total_seconds": 40.0,
        "load_average": 1.0,
        "load_average_end": 1.5,
        "command": "python benchmarks/finetune_job.py",
        "machine": "AMD EPYC, 2 cores; tensorflow 2.21.0",
    }
    return dict(record, **extra)


def test_the_section_splits_phases_steps_widths_and_ops():
    widths = [20, 20, 40, 40]
    recipe = _record(
        [100, 999, 200, 220], widths, input_seconds=[0.01] * 4,
        step_cpu_seconds=[0.2, 9.0, 0.4, 0.4], total_cpu_seconds=70.0,
    )  # fmt: skip
    parts = {
        "input": [0.002] * 4,
        "forward": [0.05] * 4,
        "backward": [0.1] * 4,
        "optimizer": [0.05] * 4,
    }
    torch_loop = _record(
        [150, 999, 300, 300], widths, step_parts=parts, total_seconds=50.0,
        total_cpu_seconds=84.0,
    )  # fmt: skip
    markdown = _section(
        {("recipe", 0): recipe, ("torch_grouped", 0): torch_loop}
    )
    assert "| total job | 40.0 | 50.0 | 1.25 |" in markdown
    assert "| total job CPU | 70.0 | 84.0 | 1.20 |" in markdown
    # Step 1 is traced: left out of the sums and medians.
    assert "| steps | 3 | 3 |" in markdown
    assert "| sum of step times (s) | 0.5 | 0.8 |" in markdown
    assert "| sum of step CPU times (s; all threads) | 1.0 | — |" in markdown
    assert "| 17-24 | 1 | 100 | 1 | 150 | 1.50 |" in markdown
    assert "| 33-48 | 2 | 210 | 2 | 300 | 1.43 |" in markdown
    assert "| 1-16 | 0 | — | 0 | — | — |" in markdown
    assert "| PyTorch backward, all steps (s) | | 0.4 |" in markdown
    assert (
        "| input pipeline alone, the same batches (s) | 0.0 | 0.0" in markdown
    )
    assert "| MatMul | 0.40 | 80.0% |" in markdown
    assert "recipe 1.0→1.5, torch_grouped 1.0→1.5" in markdown


def test_the_section_names_the_precision_and_the_profilers_time():
    widths = [20, 20, 40, 40]
    extra = dict(precision="mixed_bfloat16", profiler_seconds=2.5)
    recipe = _record(
        [100, 999, 200, 220], widths, input_seconds=[0.01] * 4, **extra
    )
    parts = {k: [0.05] * 4 for k in ("input", "forward", "backward")}
    parts["optimizer"] = [0.1] * 4
    torch_loop = _record(
        [150, 999, 300, 300], widths, step_parts=parts,
        **dict(extra, profiler_seconds=0.4),
    )  # fmt: skip
    markdown = _section(
        {("recipe", 0): recipe, ("torch_grouped", 0): torch_loop}
    )
    assert "lr 2e-5, mixed_bfloat16 (ours: Keras' policy;" in markdown
    assert (
        "leaves out starting and stopping the profilers around the traced "
        "steps (recipe 2.5 s, torch_grouped 0.4 s)" in markdown
    )
    # Records from before either was recorded: float32, nothing said.
    del recipe["precision"], recipe["profiler_seconds"]
    markdown = _section(
        {("recipe", 0): recipe, ("torch_grouped", 0): torch_loop}
    )
    assert "lr 2e-5, float32;" in markdown
    assert "profilers" not in markdown
