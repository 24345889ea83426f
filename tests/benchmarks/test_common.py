"""benchmarks/common.py, the harness: records, rounds, worker results,
what the load averages say, the summaries' notes."""

import os
import subprocess
import sys

import pytest

from benchmarks import common


def test_records_round_trip_in_file_name_order(tmp_path):
    directory = str(tmp_path / "runs")
    common.write_record(os.path.join(directory, "b.json"), {"n": 2})
    common.write_record(os.path.join(directory, "a.json"), {"n": 1})
    with open(os.path.join(directory, "notes.txt"), "w") as f:
        f.write("not a record")
    assert common.read_record(os.path.join(directory, "a.json")) == {"n": 1}
    assert common.read_records(directory) == [{"n": 1}, {"n": 2}]


def test_rounds_rotate_the_order_and_are_written_and_read_back(tmp_path):
    directory, ran = str(tmp_path), []

    def run_job(contestant, round_index):
        ran.append((round_index, contestant))
        return {"x": 10 * round_index + ord(contestant)}

    common.run_rounds(run_job, ("a", "b"), directory, 0, 2)
    assert ran == [(0, "a"), (0, "b"), (1, "b"), (1, "a")]
    assert sorted(os.listdir(directory)) == [
        "a_round0.json",
        "a_round1.json",
        "b_round0.json",
        "b_round1.json",
    ]
    records = common.by_round(common.read_records(directory))
    assert records[("b", 1)] == {"x": 108, "contestant": "b", "round": 1}
    assert [records[("b", k)]["x"] for k in (0, 1)] == [98, 108]


def test_paired_rounds_are_those_every_contestant_ran():
    records = {("a", 0): {}, ("b", 0): {}, ("a", 1): {}, ("c", 1): {}}
    assert common.paired_rounds(records, ("a", "b")) == [0]
    assert common.paired_rounds(records, ("a", "c")) == [1]
    assert common.paired_rounds(records, ("a",)) == [0, 1]
    assert common.paired_rounds(records, ("b", "c")) == []


def test_load_note_is_computed_from_the_loads_and_the_cores():
    assert common.load_note([0.5, 2.0], 2) == (
        "never above the 2 cores: a quiet machine."
    )
    assert common.load_note([1.05, 2.13], 2) == (
        "at most 0.1 above the 2 cores, what a job's own threads and "
        "start-up account for."
    )
    shared = common.load_note([8.0, 12.0], 2)
    assert shared.startswith("up to 12.0 on 2 cores: other processes")
    assert shared.endswith("trust the paired ratios over the absolute rates.")
    assert common.load_note([13.0], 4, paired=False).endswith(
        "the times are rough."
    )
    # A race whose own clients run many threads does not blame others.
    own = common.load_note([6.3], 2, own="the jobs' own client threads")
    assert own.startswith(
        "up to 6.3 on 2 cores: the jobs' own client threads count in it, or "
        "other processes, so"
    )
    assert not common.shared([3.0], 2) and common.shared([3.1], 2)
    assert common.cores("AMD EPYC, 16 cores; tensorflow 2.21.0") == 16


def test_context_note_names_the_commands_loads_and_machines():
    machine = "AMD EPYC, 2 cores; keras 3.15.1"
    records = {
        ("a", 0): {"command": "python x.py --rounds=2", "machine": machine},
        ("b", 0): {"command": "python x.py --rounds=2", "machine": machine},
        ("a", 1): {
            "command": "python x.py --first_round=1",
            "load_average": 1.5,
            "machine": machine,
        },
    }
    assert common.context_note(records) == [
        "rounds 0: `python x.py --rounds=2`; rounds 1: "
        "`python x.py --first_round=1`",
        "Load average (1 min) as each job started: round 1: 1.5; never "
        "above the 2 cores: a quiet machine.",
        machine,
    ]


def test_context_note_names_the_commits_records_ran_on():
    machine = "AMD EPYC, 2 cores; keras 3.15.1"
    records = {
        ("a", 0): {"command": "c", "commit": "abc1234", "machine": machine},
        ("a", 1): {"command": "c", "commit": "def5678", "machine": machine},
        ("a", 2): {"command": "c", "machine": machine},  # an older record
    }
    assert common.context_note(records)[:2] == [
        "rounds 0, 1, 2: `c`",
        "Commits: rounds 0: abc1234; rounds 1: def5678",
    ]


def test_a_record_names_its_commit():
    commit = common.job_context()["commit"]
    head, _, changes = commit.partition("+")
    assert len(head) >= 7 and changes in ("", "changes")


def test_paired_ratio_is_the_median_of_shared_rounds():
    ours = {0: 2.0, 1: 4.0, 2: 3.0, 5: 9.0}
    peer = {0: 1.0, 1: 1.0, 2: 2.0}
    median, per_round = common.paired_ratio(ours, peer)
    assert per_round == [2.0, 4.0, 1.5]
    assert median == 2.0
    with pytest.raises(ValueError, match="No round"):
        common.paired_ratio({0: 1.0}, {1: 1.0})


def test_update_results_replaces_its_section_only(tmp_path):
    path = str(tmp_path / "RESULTS.md")
    common.update_results("a", "first", path)
    common.update_results("b", "second", path)
    common.update_results("a", "third", path)
    with open(path) as f:
        text = f.read()
    assert text.count("BEGIN a") == 1 and "third" in text
    assert "first" not in text and "second" in text


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


def test_children_cpu_seconds_count_a_finished_job():
    before = common.children_cpu_seconds()
    subprocess.run([sys.executable, "-c", "sum(range(3 * 10**6))"], check=True)
    assert common.children_cpu_seconds() > before


def test_a_table_has_its_header_rule_and_rows_and_empty_cells_stay_narrow():
    assert common.table(["a", "b"], [[1, ""], ["x", 2.5]]) == [
        "| a | b |",
        "|---|---|",
        "| 1 | |",
        "| x | 2.5 |",
    ]
    assert common.table(["a"], [], rule=["---:"]) == ["| a |", "|---:|"]
