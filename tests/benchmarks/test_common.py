"""benchmarks/common.py: result files, worker results, NER batches."""

import os
import subprocess
import sys

import numpy as np

from benchmarks import common


def test_records_round_trip_in_file_name_order(tmp_path):
    directory = str(tmp_path / "runs")
    common.write_record(os.path.join(directory, "b.json"), {"n": 2})
    common.write_record(os.path.join(directory, "a.json"), {"n": 1})
    with open(os.path.join(directory, "notes.txt"), "w") as f:
        f.write("not a record")
    assert common.read_record(os.path.join(directory, "a.json")) == {"n": 1}
    assert common.read_records(directory) == [{"n": 1}, {"n": 2}]


def test_rounds_are_written_and_read_back(tmp_path):
    directory = str(tmp_path)

    def run_job(contestant, round_index):
        return {"contestant": contestant, "round": round_index, "x": 1}

    common.run_rounds(run_job, ("a", "b"), directory, 0, 2)
    assert sorted(os.listdir(directory)) == [
        "a_round0.json",
        "a_round1.json",
        "b_round0.json",
        "b_round1.json",
    ]
    records, values = common.round_values(directory, ("a", "b"))
    assert len(records) == 4
    np.testing.assert_array_equal(values("b", "round"), [0, 1])


def test_paired_rounds_are_those_every_contestant_ran():
    records = {("a", 0): {}, ("b", 0): {}, ("a", 1): {}, ("c", 1): {}}
    assert common.paired_rounds(records, ("a", "b")) == [0]
    assert common.paired_rounds(records, ("a", "c")) == [1]
    assert common.paired_rounds(records, ("a",)) == [0, 1]
    assert common.paired_rounds(records, ("b", "c")) == []


def test_load_note_says_whether_other_jobs_shared_the_machine():
    cores = os.cpu_count()
    assert "other jobs shared" in common.load_note([0.5, cores + 0.5])
    assert "quiet" in common.load_note([0.5, cores])


def test_worker_result_is_the_last_printed_one():
    code = (
        "from benchmarks import common; print('log'); "
        "common.print_result({'x': 1}); common.print_result([2, 3])"
    )
    output = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(os.path.dirname(common.__file__)),
    ).stdout
    assert common.worker_result(output) == [2, 3]
    assert common.worker_result("a failed worker's output\n") is None


def test_cut_batch_rounds_the_longest_row_up_to_8():
    padding_mask = np.zeros((3, 32), "int32")
    for row, length in enumerate([5, 17, 30]):
        padding_mask[row, :length] = 1
    features = {
        "token_ids": np.arange(96).reshape(3, 32),
        "padding_mask": padding_mask,
    }
    names = ("token_ids", "padding_mask")
    batch = common.cut_batch(features, np.array([1, 0]), 32, names=names)
    assert batch["token_ids"].shape == (2, 24)
    np.testing.assert_array_equal(batch["token_ids"][0], np.arange(32, 56))
    longest = common.cut_batch(features, np.array([2]), 32, names=names)
    assert longest["padding_mask"].shape == (1, 32)  # 30 -> 32, the limit
    exact = common.cut_batch(
        features, np.array([1]), 32, multiple=1, names=names
    )
    assert exact["padding_mask"].shape == (1, 17)
