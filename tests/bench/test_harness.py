"""``bench/harness.py``: the pieces every benchmark shares, on literal inputs (no database, no model)."""
import argparse
import json
import math

import pytest

from bench import harness
from bench.runner import BenchError, available, run


def test_in_turn_alternates_which_call_goes_first():
    pair = ("service", "baseline")
    assert [tuple(harness.in_turn(pair, index)) for index in range(3)] == [
        ("service", "baseline"), ("baseline", "service"), ("service", "baseline")]


def test_ratio_is_nan_over_a_zero_baseline():
    assert harness.ratio(3.0, 2.0) == 1.5
    assert math.isnan(harness.ratio(1.0, 0.0))


def test_publish_writes_json_and_report_and_stamps_the_end_load(tmp_path, capsys):
    payload = {"environment": {"machine": {"cores": 2}}, "value": 1.5}
    text = harness.publish(payload, out=tmp_path / "new", name="thing",
                           report=lambda p: f"# thing\n\nvalue {p['value']}\n")
    written = json.loads((tmp_path / "new" / "thing.json").read_text())
    assert written["value"] == 1.5
    assert len(written["environment"]["machine"]["load_average_at_end"]) == 3
    assert (tmp_path / "new" / "thing.md").read_text() == text == "# thing\n\nvalue 1.5\n"
    assert "value 1.5" in capsys.readouterr().out


def test_publish_draws_the_plot_beside_the_results(tmp_path):
    def plot(payload, path):
        with harness.figure(path) as (_, ax):
            ax.plot([1, 2], [payload["value"], 2])

    harness.publish({"value": 1}, out=tmp_path, name="drawn", report=lambda p: "", plot=plot)
    assert (tmp_path / "drawn.png").read_bytes()[:4] == b"\x89PNG"


def test_environment_records_machine_versions_and_commit_without_a_database():
    env = harness.environment({"pytest": "pytest", "absent": "no-such-distribution-here"},
                              database=False, torch=False)
    assert env["machine"]["cores"] >= 1 and len(env["machine"]["load_average_at_start"]) == 3
    assert env["versions"]["pytest"] == pytest.__version__ and env["versions"]["absent"] is None
    assert len(env["git"]["commit"]) == 40 and isinstance(env["git"]["dirty"], bool)


def test_common_options_have_one_spelling():
    parser = argparse.ArgumentParser()
    harness.add_out_argument(parser)
    harness.add_seed_argument(parser, 7)
    harness.add_database_arguments(parser, prefix="memseek_bench_x")
    args = parser.parse_args(["--drop"])
    assert (args.out, args.seed, args.database_prefix, args.drop) == (harness.RESULTS, 7, "memseek_bench_x", True)


def test_the_runner_refuses_an_unknown_name_and_passes_a_failing_exit_on():
    assert "search" in available() and "harness" not in available()
    with pytest.raises(BenchError) as unknown:
        run("harness")
    assert unknown.value.status == 2
    with pytest.raises(BenchError) as failed:
        run("hostile", "--no-such-option")
    assert failed.value.status == 1 and "exit status 2" in str(failed.value)
