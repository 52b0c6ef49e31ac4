"""What a kept ingest is keyed by (`bench.ingests`), and two runs compared question by
question (`bench.diff`)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from bench.diff import diff_runs, show_diff
from bench.ingests import INGEST_SOURCES, fingerprint, kept_in_data_dir, source_digest
from bench.locomo import Conversation
from bench.scoring import evidence_places
from tests.support.services import isolated_settings


def conversation(text: str = "I adopted a cat called Pixel.") -> Conversation:
    message = {"external_id": "0", "role": "user", "content": text,
               "created_at": "2024-03-15T09:00:00"}  # fmt: skip
    return Conversation("100K/1", ("user", "assistant"), [message], {"session_1": ["0"]}, [])


def test_the_fingerprint_holds_the_messages_embedder_and_settings_but_not_paths(
    tmp_path: Path,
) -> None:
    settings = isolated_settings(tmp_path / "a")
    key = fingerprint(settings, "use", conversation())
    assert fingerprint(isolated_settings(tmp_path / "b"), "use", conversation()) == key
    assert fingerprint(settings, "use", conversation("I adopted a dog.")) != key
    assert fingerprint(settings, "openai", conversation()) != key
    moved = isolated_settings(tmp_path / "a", max_chunk_size=200)
    assert fingerprint(moved, "use", conversation()) != key


def test_the_source_digest_changes_with_any_ingestion_file(tmp_path: Path) -> None:
    for folder in INGEST_SOURCES:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    before = source_digest(tmp_path)
    (tmp_path / "stores" / "a.py").write_text("x = 2\n")
    source_digest.cache_clear()
    assert source_digest(tmp_path) != before
    (tmp_path / "nodes" / "response").mkdir()
    (tmp_path / "nodes" / "response" / "b.py").write_text("ranking = 1\n")
    changed = source_digest(tmp_path)
    (tmp_path / "nodes" / "response" / "b.py").write_text("ranking = 2\n")
    source_digest.cache_clear()
    assert source_digest(tmp_path) == changed


def test_stores_kept_elsewhere_are_refused(tmp_path: Path) -> None:
    assert kept_in_data_dir(isolated_settings(tmp_path)) is None
    remote = isolated_settings(tmp_path, chroma_host="127.0.0.1")
    assert kept_in_data_dir(remote) == (
        "--ingests keeps a persistent Chroma only: unset TOPICA_CHROMA_HOST"
    )
    database = isolated_settings(tmp_path, database_url="postgresql://postgres@127.0.0.1/x")
    assert "unset TOPICA_DATABASE_URL" in (kept_in_data_dir(database) or "")


def record(question: str, recall: dict[str, float], conversation: str = "c1") -> dict:
    return {"conversation": conversation, "question": question, "category": "single-hop",
            "recall_all": {"topica": recall}, "recall_key": {"topica": recall}}  # fmt: skip


def test_diff_counts_the_questions_won_and_lost_at_each_budget() -> None:
    before = {"questions": [
        record("Where?", {"250": 0.0, "500": 1.0}),
        record("Who?", {"250": 1.0, "500": 1.0}),
        record("Who?", {"250": 0.0, "500": 0.0}),  # the same text asked again
        record("Gone?", {"250": 1.0, "500": 1.0}),
    ]}  # fmt: skip
    after = {"questions": [
        record("Where?", {"250": 1.0, "500": 1.0}),
        record("Who?", {"250": 1.0, "500": 0.5}),
        record("Who?", {"250": 0.0, "500": 0.0}),
        record("New?", {"250": 1.0, "500": 1.0}),
    ]}  # fmt: skip
    result = diff_runs(before, after)
    assert (result["matched"], result["only_before"], result["only_after"]) == (3, 1, 1)
    at_250, at_500 = result["budgets"]
    assert at_250["budget"] == 250 and at_250["questions"] == 3
    assert at_250["before"] == pytest.approx(1 / 3) and at_250["after"] == pytest.approx(2 / 3)
    assert [q["question"] for q in at_250["won"]] == ["Where?"] and at_250["lost"] == []
    assert at_500["won"] == [] and [q["after"] for q in at_500["lost"]] == [0.5]
    assert result["by_category"] == {"250": {"single-hop": 1}, "500": {"single-hop": -1}}


def test_diff_refuses_runs_without_records_or_the_method() -> None:
    with pytest.raises(ValueError, match="the before run has no per-question records"):
        diff_runs({}, {"questions": []})
    with pytest.raises(ValueError, match="the after run's per-question records are malformed"):
        diff_runs({"questions": []}, {"questions": [{"question": "Where?"}]})
    runs = {"questions": [record("Where?", {"250": 1.0})]}
    with pytest.raises(ValueError, match="no questions answered by bm25 and bm25 in the runs"):
        diff_runs(runs, runs, method="bm25")


def test_diff_compares_another_method_of_the_same_run() -> None:
    both = record("Where?", {"250": 1.0, "500": 1.0})
    both["recall_all"]["message_rag"] = {"250": 1.0, "500": 0.0}
    run = {"questions": [both, record("Who?", {"250": 1.0, "500": 1.0})]}
    result = diff_runs(run, run, before_method="message_rag")
    assert (result["before_method"], result["method"], result["matched"]) == (
        "message_rag",
        "topica",
        1,
    )
    at_250, at_500 = result["budgets"]
    assert not at_250["won"] and not at_250["lost"]
    assert [q["question"] for q in at_500["won"]] == ["Where?"]


def test_evidence_places_are_first_places_among_the_distinct_messages_offered() -> None:
    fill = [("t1", "a"), ("t1", "b"), ("t2", "a"), ("t2", "c")]  # "a" again: a passage
    assert evidence_places(fill, ["c", "a", "z"]) == {"c": 2, "a": 0, "z": None}


def test_diff_shows_where_a_moved_questions_evidence_stood_in_each_run() -> None:
    before, after = record("Where?", {"250": 1.0}), record("Where?", {"250": 0.0})
    before["evidence_places"] = {"topica": {"D1:2": 0, "D3:4": 5}}
    after["evidence_places"] = {"topica": {"D1:2": 0, "D3:4": None}}
    result = diff_runs({"questions": [before]}, {"questions": [after]})
    lost = result["budgets"][0]["lost"]
    assert lost[0]["places"] == {
        "before": {"D1:2": 0, "D3:4": 5},
        "after": {"D1:2": 0, "D3:4": None},
    }
    out = io.StringIO()
    show_diff(result, Console(file=out, width=200))
    assert "250 − [single-hop] c1: Where? · evidence at 0, 5 → 0, –" in out.getvalue()
    older = diff_runs({"questions": [record("Where?", {"250": 1.0})]}, {"questions": [after]})
    assert "places" not in older["budgets"][0]["lost"][0]  # a run from before the places
