"""The retrieval-quality harnesses run end to end on tiny data sets in the real formats
(``fixtures/bench/``): fresh workspace, ingest through POST /records with in-process
embedding, every configuration through the API, the plain-library baselines, metrics from
ir_measures, and the JSON / markdown / PNG outputs."""
import json
from pathlib import Path

import pytest

from catalog_app.models import Workspace
from bench.runner import BenchError, run as run_bench

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "bench"

pytestmark = [pytest.mark.model, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("BENCH_PROGRESS", "0")


def _in_unit_interval(value) -> bool:
    return isinstance(value, float) and 0.0 <= value <= 1.0


def test_scifact_harness_end_to_end(tmp_path, capsys):
    run_bench("scifact", "--data", FIXTURES / "scifact_tiny", "--out", tmp_path, "--sweep")

    result = json.loads((tmp_path / "scifact.json").read_text())
    assert result["data"]["documents"] == 20 and result["data"]["queries"] == 5
    assert result["data"]["judgements"] == 6
    # the default set: the tuned variant rrf_c10 runs only when asked for
    expected = {"text", "bm25", "vector", "vector_sim", "hybrid", "example", "rrf", "mix", "bm25_en", "example_en",
                "mix_en"}
    assert set(result["configurations"]) == expected
    assert set(result["baselines"]) == {"bm25s_plain", "bm25s_stemmed", "bm25s_en", "brute_force", "rrf_library",
                                        "rrf_library_c10", "mix_library"}
    for entry in (*result["configurations"].values(), *result["baselines"].values()):
        assert set(entry["metrics"]) == {"nDCG@10", "R@100", "RR@10"}
        assert all(_in_unit_interval(value) for value in entry["metrics"].values()), entry["metrics"]
    # Claim 1 is abstract t1's title: every configuration and baseline must rank t1 first.
    per_query = result["per_query"]
    first = per_query["qids"].index("1")
    for name, values in per_query["nDCG@10"].items():
        assert values[first] == 1.0, name
    # The service's exact BM25 is bm25_v1; bm25s with the same tokens must agree with it.
    assert result["bm25_agreement"]["overlap_at_10"] == 1.0
    assert result["configurations"]["bm25"]["metrics"] == result["baselines"]["bm25s_plain"]["metrics"]
    # bm25_en is bm25s with the same stemmer, stopwords and constants.
    assert result["bm25_en_agreement"]["overlap_at_10"] == 1.0
    assert result["configurations"]["bm25_en"]["metrics"] == result["baselines"]["bm25s_en"]["metrics"]
    # Every other configuration against the example default, paired per query.
    boot = result["paired_bootstrap"]
    assert boot["against"] == "example" and set(boot["differences"]) == expected - {"example"}
    for diff in boot["differences"].values():
        assert diff["low"] <= diff["mean"] <= diff["high"] and diff["queries"] == 5
    assert {t["config"] for t in result["targets"]} >= {"bm25"}
    for key in ("machine", "versions", "git"):
        assert result["environment"][key]
    assert result["environment"]["versions"]["postgres_server"]
    assert (tmp_path / "scifact.md").read_text().startswith("# SciFact retrieval quality")
    assert all((tmp_path / name).stat().st_size > 0 for name in result["plots"])
    assert not Workspace.objects.filter(name__startswith="bench-scifact-").exists()
    # The sweep ranks the service's own pools: its figure for the example catalog's formula is
    # what that formula scored through the API.
    assert _swept_example(tmp_path / "scifact_sweep.json") == result["configurations"]["example"]["metrics"]["nDCG@10"]


def _swept_example(path: Path) -> float:
    from bench.rank_sweep import example_hybrid_rank
    from search_app.engine.rank_expression import parse_rank

    sweep = json.loads(path.read_text())
    assert len(sweep["formulas"]) > 1
    (value,) = [entry["value"] for entry in sweep["formulas"].values()
                if parse_rank(entry["rank"]) == parse_rank(example_hybrid_rank())]
    return value


def test_locomo_harness_end_to_end(tmp_path):
    run_bench("locomo", "--data", FIXTURES / "locomo_tiny.json", "--out", tmp_path, "--configs", "all",
              "--sweep")

    result = json.loads((tmp_path / "locomo.json").read_text())
    assert result["data"]["turns"] == 12 and result["data"]["questions"] == 5
    assert result["data"]["evidence_ids_matching_no_turn"] == ["conv-tiny:D9:99"]
    assert set(result["configurations"]) == {"text", "bm25", "vector", "hybrid", "example", "rrf", "rrf_c10", "rrf3",
                                             "mix", "bm25_en", "example_en"}
    per_question = result["per_question"]
    for name, entry in (*result["configurations"].items(), *result["baselines"].items()):
        for cutoff in ("5", "10", "25", "50"):
            recall = entry["recall"][cutoff]
            assert 0.0 <= recall["overall"] <= 100.0
            assert set(recall["categories"]) == {"1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop",
                                                 "5 adversarial"}
        assert _in_unit_interval(entry["ir_measures"]["nDCG@10"]) and _in_unit_interval(entry["ir_measures"]["R@10"])
        values = dict(zip(per_question["qids"], per_question["recall@10"][name]))
        assert values["conv-tiny#0"] == 1.0, name  # the greyhound question names its turn
        assert values["conv-tiny#3"] == 1.0, name  # no evidence counts as 1
        assert values["conv-tiny#4"] <= 0.5, name  # D9:99 matches no turn and stays in the denominator
        # With all 12 turns retrieved, only the missing id is missed.
        assert entry["recall"]["50"]["overall"] == pytest.approx(100 * (4 + 0.5) / 5), name
    assert result["target"]["target"] == 66.2
    assert all((tmp_path / name).stat().st_size > 0 for name in result["plots"])
    assert not Workspace.objects.filter(name__startswith="bench-locomo-").exists()
    example_recall = result["configurations"]["example"]["recall"]["10"]["overall"]
    assert _swept_example(tmp_path / "locomo_sweep.json") == example_recall


def test_unknown_benchmark_lists_the_available_ones():
    with pytest.raises(BenchError) as raised:
        run_bench("nope")
    assert raised.value.status == 2
    assert "scifact" in str(raised.value) and "locomo" in str(raised.value)


def test_locomo_configuration_on_another_runtime(tmp_path):
    """``NAME@RUNTIME`` asks NAME of a second workspace switched to that runtime while empty: its
    turns are embedded in that runtime's space, and it is compared with NAME on the process's
    runtime (torch) by a paired bootstrap, overall and per category."""
    run_bench("locomo", "--data", FIXTURES / "locomo_tiny.json", "--out", tmp_path,
                 "--configs", "example@torch,example@onnx-int8")

    result = json.loads((tmp_path / "locomo.json").read_text())
    assert list(result["configurations"]) == ["example@torch", "example@onnx-int8"]
    assert result["configurations"]["example@onnx-int8"]["runtime"] == "onnx-int8"
    (runtime,) = result["runtimes"]
    assert runtime == "onnx-int8"
    assert result["runtimes"][runtime]["space"].endswith(".onnx-int8")
    assert result["runtimes"][runtime]["vectors"] == result["runtimes"][runtime]["records"] == 12
    per_question = dict(zip(result["per_question"]["qids"], result["per_question"]["recall@10"]["example@onnx-int8"]))
    assert per_question["conv-tiny#0"] == 1.0  # the greyhound question still finds its turn
    comparison = result["runtime_bootstrap"]
    assert comparison["against_runtime"] == "torch" and list(comparison["differences"]) == ["example@onnx-int8"]
    diff = comparison["differences"]["example@onnx-int8"]
    assert diff["against"] == "example@torch" and diff["queries"] == 5
    assert diff["low"] <= diff["mean"] <= diff["high"]
    assert set(diff["categories"]) == {"1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop",
                                       "5 adversarial"}
    assert "## Runtimes against torch" in (tmp_path / "locomo.md").read_text()
    assert not Workspace.objects.filter(name__startswith="bench-locomo").exists()


def test_scifact_configuration_on_a_runtime_names_it(tmp_path):
    run_bench("scifact", "--data", FIXTURES / "scifact_tiny", "--out", tmp_path,
                 "--configs", "vector_sim,vector_sim@onnx")

    result = json.loads((tmp_path / "scifact.json").read_text())
    assert list(result["configurations"]) == ["vector_sim", "vector_sim@onnx"]
    # fp32 ONNX computes the same vectors as torch (docs/encoder.md): the same ranking
    assert result["configurations"]["vector_sim@onnx"]["metrics"] == result["configurations"]["vector_sim"]["metrics"]
    diff = result["runtime_bootstrap"]["differences"]["vector_sim@onnx"]
    assert diff["against"] == "vector_sim" and diff["mean"] == 0.0
    assert result["runtimes"]["onnx"]["space"].endswith(".onnx") and result["runtimes"]["onnx"]["vectors"] == 20


@pytest.mark.parametrize("configs, message", [("example@gpu", "unknown runtime(s) gpu"),
                                              ("nope@onnx", "unknown configuration(s) nope")])
def test_configs_with_an_unknown_runtime_or_name_fail(configs, message, capsys):
    with pytest.raises(BenchError):
        run_bench("locomo", "--data", FIXTURES / "locomo_tiny.json", "--configs", configs)
    assert message in capsys.readouterr().err
