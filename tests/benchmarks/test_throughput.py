"""benchmarks/throughput.py: the alternating timed windows that its
ablation and recipe_steps races share (no model, no timing of one)."""

from benchmarks.throughput_races import shared


def test_windows_alternate_and_give_seconds_per_step(monkeypatch):
    calls, clock = [], iter(range(0, 1000, 4))
    monkeypatch.setattr(shared.time, "perf_counter", lambda: next(clock))

    def train_function(name):
        def run(iterator):
            calls.append((name, next(iterator)))
            return {"loss": 0.5}

        return run

    steps = {name: (train_function(name), iter(range(9))) for name in "ab"}
    seconds = shared.alternating_windows(steps, rounds=3, window=2)
    # Each window reads the clock twice, 4 apart: 4 seconds over 2 steps.
    assert seconds == {"a": [2.0, 2.0, 2.0], "b": [2.0, 2.0, 2.0]}
    assert [name for name, _ in calls] == list("aabb" * 3)
    assert [k for name, k in calls if name == "b"] == list(range(6))
