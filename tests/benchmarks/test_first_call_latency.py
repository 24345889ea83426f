"""benchmarks/first_call_latency.py: the block timing and the table."""

from benchmarks import first_call_latency


def test_blocks_time_after_the_warm_up_calls():
    seen = []
    seconds = first_call_latency.time_block(seen.append, [1, 2, 3, 4], 2)
    assert seen == [1, 2, 3, 4] and seconds >= 0


def test_the_table_gives_paired_ratios_and_verdicts():
    machine = "AMD EPYC, 2 cores; tensorflow 2.21.0"
    times = {
        "ours_encode@1": 10.0, "sentence_transformers@1": 5.0,
        "ours_predict@1": 6.0, "pipeline@1": 6.0,
        "ours_encode@10": 11.0, "sentence_transformers@10": 10.0,
        "ours_predict@10": 30.0, "pipeline@10": 20.0,
    }  # fmt: skip
    record = {
        "rounds": [times, {k: 2 * v for k, v in times.items()}],
        "calls": 15,
        "warmup": 3,
        "threads": 1,
        "command": "python benchmarks/first_call_latency.py",
        "machine": machine,
        "load_average": 1.0,
        "load_average_1min_end": 1.5,
        "uptime_before": "load average: 1.00",
    }
    table = first_call_latency.summary_markdown([record])
    assert (
        "| 1 | ours_encode | 15.0 | sentence_transformers | 7.5 | 2.00 "
        "| ≤1.5×: missed |" in table
    )
    assert (
        "| 10 | ours_encode | 16.5 | sentence_transformers | 15.0 | "
        "1.10 | ≤1.2×: met |" in table
    )
    assert "| 10 | ours_predict | 45.0 | pipeline | 30.0 | 1.50 " in table
    assert "Threads: 1; 2 rounds." in table
