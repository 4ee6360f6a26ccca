"""The LoCoMo retrieval benchmark runs end to end (quick mode) and writes sane results.

The data is not in the repository (CC BY-NC 4.0); the test runs only where the shared copy is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"

# `benchmarks` is a top-level folder of the repository, not part of the installed package.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _run_module(module: str, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"{module}.json"
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args, "--out", str(out)],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


def run_quick(module: str, tmp_path: Path, *extra: str) -> dict:
    """Run `python -m benchmarks.MODULE --quick [EXTRA...]` on the shared data; return its JSON results."""
    return _run_module(module, tmp_path, "--quick", "--data", str(DATA), *extra)


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_locomo_retrieval_quick(tmp_path: Path) -> None:
    report = run_quick("locomo_retrieval", tmp_path)

    assert set(report["retrievers"]) == {"keyword", "vector", "fused"}
    assert report["quick"] is True and 0 < report["questions"] <= 60
    for name, retriever in report["retrievers"].items():
        results = retriever["results"]
        assert "overall_1-4" in results and "overall_1-5" in results, name
        for group, m in results.items():
            assert m["n"] > 0, (name, group)
            recalls = [m[f"recall@{k}"] for k in (5, 10, 25, 50)]
            assert all(0.0 <= r <= 1.0 for r in recalls), (name, group, recalls)
            assert m["recall@50"] >= m["recall@5"], (name, group)
            assert all(0.0 <= m[k] <= 1.0 for k in ("hit@1", "mrr", "ndcg@10")), (name, group)


def test_evidence_normalization() -> None:
    from benchmarks.locomo import normalize_dia_id, split_evidence

    assert normalize_dia_id("D30:05") == "D30:5"
    assert normalize_dia_id("D:11:26") == "D:11:26"  # not shaped D<n>:<n>: left for the caller to skip
    assert split_evidence(["D9:1 D4:4 D4:6", "D8:6; D9:17", "D30:05"]) == [
        "D9:1",
        "D4:4",
        "D4:6",
        "D8:6",
        "D9:17",
        "D30:5",
    ]
    assert split_evidence(None) == []


def test_question_metrics() -> None:
    from benchmarks.locomo_retrieval import question_metrics

    ranked = ["x", "a", "y", "b"] + [f"n{i}" for i in range(46)]
    m = question_metrics(ranked, {"a", "b", "zz"})
    assert m["recall@5"] == pytest.approx(2 / 3)
    assert m["recall@50"] == pytest.approx(2 / 3)
    assert m["hit@1"] == 0.0 and m["mrr"] == pytest.approx(0.5)
    assert 0.0 < m["ndcg@10"] < 1.0
    assert question_metrics(["a", "b"], {"a", "b"})["ndcg@10"] == pytest.approx(1.0)


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_locomo_learning_quick(tmp_path: Path) -> None:
    report = run_quick("locomo_learning", tmp_path)

    expected = {"static", "full", "shuffled", "valence_only", "quality_only", "associations_off"}
    assert report["quick"] is True
    assert expected <= set(report["configs"])
    assert report["static_drift_questions"] == 0  # reads without feedback never reorder
    by_config = report["results"]["0"]
    assert expected <= set(by_config)
    for name, entry in by_config.items():
        assert "train" in entry, name
        for group in ("train", "transfer", "control"):
            if group not in entry:
                continue
            g = entry[group]
            assert g["n_questions"] > 0, (name, group)
            for rnd, metrics in g["rounds"].items():
                for metric, value in metrics.items():
                    assert 0.0 <= value <= 1.0, (name, group, rnd, metric, value)
            for share in g["changed_vs_static"].values():
                assert 0.0 <= share <= 1.0, (name, group)
            for metric, v in g["vs_static"].items():
                lo, hi = v["ci95"]
                assert -1.0 <= lo <= hi <= 1.0 and -1.0 <= v["diff"] <= 1.0, (name, group, metric)
    assert all(m["diff"] == 0.0 for m in by_config["static"]["train"]["vs_static"].values())
    assert by_config["full"]["train"]["n_cases"] <= 40


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_locomo_learning_assistant_quick(tmp_path: Path) -> None:
    report = run_quick("locomo_learning", tmp_path, "--protocol", "assistant")

    modes = {"uniform", "aligned", "response_only", "shuffled_response"}
    assert report["benchmark"] == "locomo_learning_assistant" and report["quick"] is True
    assert report["options"]["protocol"] == "assistant"
    assert set(report["configs"]) == {"static"} | modes
    assert report["static_drift_questions"] == 0
    assert report["embedding_table_misses"] == 0
    by_config = report["results"]["0"]
    assert set(by_config) == {"static"} | modes
    reads = by_config["static"]["volume_per_seed"]["reads"]
    for name, entry in by_config.items():
        for group in ("train", "transfer", "control"):
            if group not in entry:
                continue
            g = entry[group]
            assert g["n_questions"] > 0, (name, group)
            if name in modes:  # learning curves: cold start and every round
                assert set(g["rounds"]) == {"0", "1", "2"}, (name, group)
            for metrics in g["rounds"].values():
                assert all(0.0 <= v <= 1.0 for v in metrics.values()), (name, group)
            assert all(0.0 <= share <= 1.0 for share in g["changed_vs_static"].values()), (name, group)
            for v in g["vs_static"].values():
                lo, hi = v["ci95"]
                assert -1.0 <= lo <= hi <= 1.0 and -1.0 <= v["diff"] <= 1.0, (name, group)
        if name == "static":
            continue
        v = entry["volume_per_seed"]
        # The same feedback volume everywhere: one call per training read, all recalled ids.
        assert v["reads"] == v["feedback_calls"] == reads > 0, name
        assert v["ids_sent"] == 5 * reads and v["embed_misses"] == 0, name
        assert 0 <= v["answered_gold"] <= reads, name
    vol = {name: by_config[name]["volume_per_seed"] for name in modes}
    assert vol["response_only"]["outcome_pos"] + vol["response_only"]["outcome_neg"] == 0
    assert vol["response_only"]["cue_updates"] == 0  # no outcome: no query->memory links taught
    assert vol["uniform"]["responses"] == 0 and vol["aligned"]["responses"] == reads
    assert vol["uniform"]["credit_rest_sum"] == 4 * reads  # no response: every memory takes the whole outcome
    assert vol["aligned"]["align_top_sum"] > vol["shuffled_response"]["align_top_sum"]  # the answer follows the top


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_speed_quick(tmp_path: Path) -> None:
    (row,) = run_quick("speed", tmp_path)["rows"]
    assert row["memories"] >= row["n"] == 300
    for key in (
        "read_p50_ms",
        "read_p95_ms",
        "floor_p50_ms",
        "stdio_read_p50_ms",
        "initialize_ms",
        "bare_initialize_ms",
        "stdio_initialize_ms",
        "first_read_ms",
        "read_over_floor",
        "stdio_over_floor",
        "stdio_bare_read_p50_ms",
        "stdio_bare_over_floor",
        "initialize_over_bare",
    ):
        assert row[key] > 0, key
    assert row["read_p95_ms"] >= row["read_p50_ms"]
    assert row["first_read_ms"] >= row["stdio_initialize_ms"]
    # The in-memory index re-scores its candidates exactly as sqlite-vec does: nothing is lost.
    assert row["vector_recall@10"] == row["vector_recall@100"] == 1.0
    assert row["db_bytes"] > 0 and row["server_peak_rss_mb"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_locomo_lifecycle_quick(tmp_path: Path) -> None:
    report = run_quick("locomo_lifecycle", tmp_path)

    assert report["quick"] is True
    assert report["protocol"]["days"] < 365 and report["protocol"]["max_questions"] <= 20
    assert set(report["results"]) == {"none", "user"}
    for variant, groups in report["results"].items():
        s = groups["all"]
        assert s["asks"] == report["protocol"]["max_questions"] * report["protocol"]["asks_per_question"], variant
        for key in ("recall@5_consolidation", "recall@5_baseline", "needed_archived", "asks_with_evidence_archived"):
            assert 0.0 <= s[key] <= 1.0, (variant, key)
        # With consolidation off nothing is ever archived.
        assert s["baseline_needed_archived"] == 0.0 and s["end"]["baseline_archived"] == 0, variant
        end = s["end"]
        for key in ("evidence", "never_used", "never_used_in_baseline", "used", "all"):
            assert 0 <= end[key]["archived"] <= end[key]["n"] and 0.0 <= end[key]["share"] <= 1.0, (variant, key)
        assert end["never_used"]["n"] + end["used"]["n"] == end["all"]["n"] > 0
        # The quick period outlasts the retention window of a never-used memory.
        assert end["never_used"]["share"] > 0.5, variant
        assert sum(s["live_tiers"].values()) == end["all"]["n"] - end["all"]["archived"], variant
        assert s["events"]["archived"] == end["all"]["archived"], variant
        assert all(v >= 0 for v in s["events"].values()), variant


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_hooks_speed_quick(tmp_path: Path) -> None:
    report = run_quick("hooks_speed", tmp_path)
    assert report["memories"] == 300 and report["hook_errors"] is False and report["baseline_p50_ms"] > 0
    events = {"UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "SessionStart", "Stop", "Bash, not a check"}
    for rows in (report["with_server"], report["no_server"]):
        assert set(rows) == events
        assert all(r["p50_ms"] > 0 and r["p95_ms"] >= r["p50_ms"] for r in rows.values())


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="reads the servers' memory from /proc")
def test_sessions_quick_two_servers_sharing_a_model_hold_less_than_two_with_their_own(tmp_path: Path) -> None:
    report = run_quick("sessions", tmp_path)
    before, now = (report["configs"][label]["2"] for label in report["configs"])
    assert before["servers"] == now["servers"] == 2
    assert now["pss_sum_mb"] < before["pss_sum_mb"] - 60  # one model less, and its weights int8
    host, further = now["per_server_private_mb"]  # each server's own pages, the model's host first
    assert len(now["per_server_pss_mb"]) == 2 and further < host - 40  # the further server holds no model
    assert report["embeddings"]["cosine_min"] >= 0.999


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_injection_floor_quick(tmp_path: Path) -> None:
    report = run_quick("injection_floor", tmp_path)
    (split,) = report["results"].values()
    shares = [split[f]["injected_share"] for f in sorted(split, key=float)]
    assert shares == sorted(shares, reverse=True) and shares[0] > 0  # a higher floor injects less
    assert all(0.0 <= r["precision"] <= 1.0 and r["helped_share"] <= r["injected_share"] for r in split.values())


@pytest.mark.slow
def test_natural_prompts_quick(tmp_path: Path) -> None:
    out = tmp_path / "natural_prompts.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.natural_prompts", "--quick", "--out", str(out)],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())
    for mode in ("semantic", "keyword"):
        r = report[mode]
        chosen = r["chosen_on_tune"]
        floors = ("full_confidence", "best_confidence") if mode == "semantic" else ("full_floor", "pointer_floor")
        assert chosen["notes"] >= 1 and all(0.0 <= chosen[f] <= 1.0 for f in floors)
        assert chosen.get("by_confidence", False) == (mode == "semantic")
        for key in ("reach", "in_full", "wrong_full", "wrong_pointer", "quiet"):
            assert 0.0 <= r["test"][key] <= 1.0
        # Pointers reach more than one note in full alone, and say less on prompts with no answer.
        alone = r["test_without_pointers"]
        assert alone["reach"] <= r["test"]["reach"] and alone["quiet"] >= r["test"]["quiet"]
        assert alone["wrong_pointer"] == 0.0 or alone["wrong_pointer"] <= r["test"]["wrong_pointer"]


@pytest.mark.slow
def test_capture_quick_learns_only_with_capture_on_and_never_without_an_outcome(tmp_path: Path) -> None:
    report = _run_module("capture", tmp_path, "--quick")
    on, off = report["runs"]
    assert on["capture"] == "outcomes" and off["capture"] == "off"
    assert on["stored_without_an_outcome"] == 0 and on["cases_stored"] > 0 and not on["hook_errors"]
    assert off["cases_stored"] == 0 and off["recurrences_all"]["none"] == 1.0
    assert on["recurrences_all"]["fix first"] > off["recurrences_all"]["fix first"]


@pytest.mark.slow
def test_dedup_benchmark_reports_the_rule_against_the_one_before(tmp_path: Path) -> None:
    report = _run_module("dedup", tmp_path)
    assert set(report["chosen_on_tune"]) == {"words_alike", "meaning_alike", "synonyms_alike"}
    assert (
        report["test"]["per_label"]["update"]["n"] > 0 and report["test_before"]["per_label"]["update"]["recall"] == 0.0
    )


@pytest.mark.slow
def test_injection_benchmark_quick_keeps_every_note_and_every_output_valid(tmp_path: Path) -> None:
    report = _run_module("injection", tmp_path, "--quick")
    assert report["all_stored"] and report["invalid_json"] == 0 and report["fence_errors"] == 0
    for split in report["splits"].values():
        assert split["hostile_injected"] <= split["hostile"] - split["hostile_quarantined"]


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo data not found at {DATA} (not shipped with the repository)")
def test_vector_options_quick(tmp_path: Path) -> None:
    report = run_quick("vector_options", tmp_path)
    options = {k: v for k, v in report.items() if isinstance(v, dict)}
    assert {"vec0 float", "memory float32", "vec0 bit + rescore", "vec0 int8 + rescore"} <= set(options)
    for name, r in options.items():
        assert r["p50_ms"] > 0 and 0.0 <= r["recall@10"] <= 1.0 and 0.0 <= r["recall@100"] <= 1.0, name
    # What reads use finds exactly what sqlite-vec finds.
    assert options["memory float32"]["recall@10"] == options["memory float32"]["recall@100"] == 1.0
    assert (
        options["memory float32"]["memory_mb"] > options["memory bits + rescore from sqlite-vec's blobs"]["memory_mb"]
    )


def test_hostile_model_threshold_rule_takes_the_lowest_within_the_benign_budget() -> None:
    from benchmarks.hostile_model import BENIGN_BUDGET, by_rule

    assert BENIGN_BUDGET == 1.5
    benign = [{"id": f"b{i}", "label": "benign"} for i in range(100)]
    hostile = [{"id": f"h{i}", "label": "hostile"} for i in range(10)]
    notes = benign + hostile
    flags = {n["id"]: False for n in notes}
    flags["b99"] = True  # kept out by the rules already: not the model's to count
    # Benign scores: 5 at 0.55 (in at 0.5), 1 at 0.65 (in up to 0.6), 1 at 0.72 (in up to 0.7).
    scores = [0.55] * 5 + [0.65, 0.72] + [0.1] * 93 + [0.95] * 10
    assert by_rule(notes, scores, flags) == 0.7  # 0.6 adds 2 points, 0.7 adds 1
    scores[7:9] = [0.72, 0.72]
    assert by_rule(notes, scores, flags) == 0.75  # now 0.7 adds 3 points


def test_hostile_model_never_reads_the_other_languages_set() -> None:
    from benchmarks.hostile_model import NOT_TRAINED, corpus, trainable

    notes = corpus()
    assert "k" in NOT_TRAINED and any(r["set"] == "k" for r in notes)
    kept = trainable(notes)
    assert not any(r["set"] == "k" for r in kept)
    assert len(kept) == sum(r["set"] != "k" for r in notes)
