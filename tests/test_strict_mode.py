"""Strict mode (`KERAS_BERT_STRICT_TESTS=1`, set by `.ci/run`): a skip
for missing material is a failure, so a broken install cannot go green."""

import types

from tests import conftest


def report(outcome, **extra):
    return types.SimpleNamespace(
        outcome=outcome,
        skipped=outcome == "skipped",
        longrepr=("tests/x.py", 3, "Skipped: needs the corpus"),
        **extra,
    )


def test_strict_mode_turns_a_skip_into_a_failure(monkeypatch):
    monkeypatch.setattr(conftest, "STRICT", True)
    skipped = report("skipped")
    conftest._fail_if_strict(skipped)
    assert skipped.outcome == "failed"
    assert "needs the corpus" in skipped.longrepr
    assert "KERAS_BERT_STRICT_TESTS=1" in skipped.longrepr


def test_strict_mode_leaves_passes_and_xfails(monkeypatch):
    monkeypatch.setattr(conftest, "STRICT", True)
    passed, xfailed = report("passed"), report("skipped", wasxfail="known")
    conftest._fail_if_strict(passed)
    conftest._fail_if_strict(xfailed)
    assert (passed.outcome, xfailed.outcome) == ("passed", "skipped")


def test_without_strict_mode_a_skip_stays_a_skip(monkeypatch):
    monkeypatch.setattr(conftest, "STRICT", False)
    skipped = report("skipped")
    conftest._fail_if_strict(skipped)
    assert skipped.outcome == "skipped"
