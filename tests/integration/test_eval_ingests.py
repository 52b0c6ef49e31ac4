"""`eval … --ingests DIR`: a conversation stored once (real SQLite, Chroma, USE, the
memory graph) is reused by the next run while nothing it was made from changed, and
stored afresh when something did; the run's per-question records compare two runs
(`eval diff`)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

import bench.harness
from bench.beam import BEAM
from bench.harness import evaluate
from bench.ingests import INGEST_SOURCES, LOCK, MANIFEST, REPO, Ingests
from bench.terminal import show_eval
from bench.topica import Topica
from cli.main import main
from tests.integration.test_bench_beam import FIXED_ORDER, beam_folder
from tests.support.bench import FixedOrder
from tests.support.services import isolated_settings

pytestmark = pytest.mark.timeout(300)


async def run(data: Path, ingests: Path, **overrides: object) -> dict:
    return await evaluate(
        BEAM,
        data,
        None,
        500,
        [1],
        None,
        isolated_settings(ingests.parent / "unused", **overrides),
        budgets=[250, 500],
        methods=lambda: [Topica(), FixedOrder(FIXED_ORDER)],
        console=Console(quiet=True),
        ingests=ingests,
    )


def stored_nothing(*args: object, **kwargs: object) -> None:
    raise AssertionError("the memory graph ran for a conversation stored before")


async def test_a_second_run_reuses_the_stored_conversation_and_scores_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, ingests = beam_folder(tmp_path / "beam"), tmp_path / "ingests"
    first = await run(data, ingests)
    kept = ingests / "100K_1"
    assert first["conversations"]["100K/1"]["ingest"]["reused"] is False
    assert json.loads((kept / MANIFEST).read_text())["ingest"]["messages"] == 8
    assert (kept / "topica.sqlite3").is_file() and (kept / "chroma").is_dir()
    monkeypatch.setattr(bench.harness, "archive_user", stored_nothing)
    second = await run(data, ingests)
    report = second["conversations"]["100K/1"]["ingest"]
    assert report["reused"] is True and report["topics"] == first["ingest"]["topics"]
    for name in ("topica", "fixed"):
        assert (
            second["methods"][name]["recall_all_by_budget"]
            == (first["methods"][name]["recall_all_by_budget"])
        )
    assert second["questions"] == first["questions"]
    assert [q["question"] for q in first["questions"]] == [
        "What toy does my cat love?",
        "When is my rowing race?",
        "Summarise my cat's first weeks.",
    ]
    assert set(first["questions"][0]["recall_all"]) == {"topica", "fixed"}
    assert set(first["questions"][0]["recall_key"]["topica"]) == {"250", "500"}
    for question in first["questions"]:  # where each method's order put the evidence
        fixed = question["evidence_places"]["fixed"]
        assert fixed and fixed == {i: FIXED_ORDER.index(i) for i in fixed}
        assert set(question["evidence_places"]["topica"]) == set(fixed)


async def test_a_changed_conversation_or_setting_is_stored_afresh(tmp_path: Path) -> None:
    data, ingests = beam_folder(tmp_path / "beam"), tmp_path / "ingests"
    await run(data, ingests)
    manifest = ingests / "100K_1" / MANIFEST
    made = json.loads(manifest.read_text())["fingerprint"]
    chat = data / "100K" / "1" / "chat.json"
    chat.write_text(chat.read_text().replace("Pixel", "Pepper"))
    changed = await run(data, ingests)
    assert changed["conversations"]["100K/1"]["ingest"]["reused"] is False
    remade = json.loads(manifest.read_text())["fingerprint"]
    assert remade != made
    other = await run(data, ingests, chunk_interval="PT2H")
    assert other["conversations"]["100K/1"]["ingest"]["reused"] is False
    assert json.loads(manifest.read_text())["fingerprint"] not in {made, remade}


async def test_an_interrupted_store_is_redone(tmp_path: Path) -> None:
    data, ingests = beam_folder(tmp_path / "beam"), tmp_path / "ingests"
    half = ingests / "100K_1"
    half.mkdir(parents=True)
    (ingests / LOCK).touch()  # the run cut short held the folder
    (half / "left-over").write_text("a store cut short: no manifest")
    result = await run(data, ingests)
    assert result["conversations"]["100K/1"]["ingest"]["reused"] is False
    assert not (half / "left-over").exists() and (half / MANIFEST).is_file()


async def test_a_folder_another_run_holds_is_refused(tmp_path: Path) -> None:
    data, ingests = beam_folder(tmp_path / "beam"), tmp_path / "ingests"
    with Ingests(ingests).held():
        with pytest.raises(ValueError, match=f"--ingests: {ingests} is in use by another run"):
            await run(data, ingests)
        assert not (ingests / "100K_1").exists()
    assert (await run(data, ingests))["conversations"]["100K/1"]["ingest"]["reused"] is False


async def test_a_folder_of_other_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    data, other = beam_folder(tmp_path / "beam"), tmp_path / "photos"
    (other / "100K_1").mkdir(parents=True)
    (other / "100K_1" / "holiday.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(ValueError, match=f"--ingests: {other} holds other files"):
        await run(data, other)
    assert (other / "100K_1" / "holiday.jpg").read_bytes() == b"\xff\xd8"


async def test_the_harness_refuses_ingests_on_postgresql(tmp_path: Path) -> None:
    """Its schema is dropped after each conversation: nothing could be reused."""
    data, ingests = beam_folder(tmp_path / "beam"), tmp_path / "ingests"
    with pytest.raises(ValueError, match="--ingests keeps SQLite stores only"):
        await run(data, ingests, database_url="postgresql://postgres@127.0.0.1:5432/postgres")
    assert not ingests.exists()


def test_ingests_are_refused_where_the_stores_are_not_in_the_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = beam_folder(tmp_path / "beam")
    command = ["eval", "beam", "--data", str(data), "--data-dir", str(tmp_path / "d")]
    monkeypatch.setenv("TOPICA_CHROMA_HOST", "127.0.0.1")
    assert main([*command, "--ingests", str(tmp_path / "ing")]) == 2
    assert capsys.readouterr().err == (
        "topica: error: --ingests keeps a persistent Chroma only: unset TOPICA_CHROMA_HOST\n"
    )
    assert not (tmp_path / "d").exists() and not (tmp_path / "ing").exists()
    monkeypatch.delenv("TOPICA_CHROMA_HOST")
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert main([*command, "--ingests", str(a_file)]) == 2
    assert capsys.readouterr().err == f"topica: error: --ingests: {a_file} is not a folder\n"


PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path
from app.memory import archive_user
from core.settings import Settings
from stores.services import build_deps
deps = build_deps(Settings(_env_file=None, data_dir=Path(tempfile.mkdtemp())))
lines = ["I adopted a grey cat called Pixel.", "Give her a quiet room and fresh water.",
         "I joined the rowing club; we race on June 14.", "Train steady pieces and starts."]
deps.indexer.store_messages(1, [
    {"external_id": str(i), "role": ("user", "assistant")[i % 2], "content": text,
     "created_at": f"2024-03-{15 + i}T09:00:00"} for i, text in enumerate(lines)])
asyncio.run(archive_user(deps, 1, archive_all=True))
deps.close()
print(json.dumps([m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)]))
"""


def test_every_module_ingestion_runs_is_under_the_digested_sources() -> None:
    """A fresh interpreter stores and archives a small conversation as the harness does
    (`bench.harness.ingest`); each of Topica's own modules it loaded must be one the
    digest reads, or a change to it would leave a stale memory reused."""
    loaded = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True
    )
    own = [
        Path(path).resolve().relative_to(REPO).as_posix()
        for path in json.loads(loaded.stdout.splitlines()[-1])
        if Path(path).resolve().is_relative_to(REPO) and ".venv" not in Path(path).parts
    ]
    assert "graphs/memory.py" in own and "nodes/memory/topics.py" in own
    outside = [p for p in own if not any(p.startswith(f"{s}/") for s in INGEST_SOURCES)]
    assert outside == ["nodes/__init__.py"]


def eval_json(command: list[str]) -> dict:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        assert main([*command, "--json"]) == 0
    return json.loads(stdout.getvalue())


def test_eval_diff_on_two_command_line_runs(tmp_path: Path) -> None:
    data, ingests = beam_folder(tmp_path / "beam"), tmp_path / "ingests"
    command = ["eval", "beam", "--data", str(data), "--data-dir", str(tmp_path / "d")]
    first = eval_json([*command, "--ingests", str(ingests), "--budget", "250"])
    second = eval_json([*command, "--ingests", str(ingests), "--budget", "250"])
    assert second["conversations"]["100K/1"]["ingest"]["reused"] is True
    # The second run as if one question had lost its evidence at every budget.
    lost = second["questions"][1]
    lost["recall_all"]["topica"] = {budget: 0.0 for budget in lost["recall_all"]["topica"]}
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(first))
    after.write_text(json.dumps(second))
    same = eval_json(["eval", "diff", str(before), str(before)])
    assert all(not row["won"] and not row["lost"] for row in same["budgets"])
    moved = eval_json(["eval", "diff", str(before), str(after)])
    held = [row for row in moved["budgets"] if first["questions"][1]["recall_all"]["topica"][
        str(row["budget"])] == 1.0]  # fmt: skip
    assert held, "the question was recalled at some budget in the first run"
    for row in held:
        assert [q["question"] for q in row["lost"]] == ["When is my rowing race?"]
        assert row["after"] == pytest.approx(row["before"] - 1 / 3)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["eval", "diff", str(before), str(after)]) == 0
    places = ", ".join(str(p) for p in second["questions"][1]["evidence_places"]["topica"].values())
    assert (
        f"− [knowledge_update] 100K/1: When is my rowing race? · evidence at {places} → {places}"
        in stdout.getvalue()
    )
    terminal = io.StringIO()
    show_eval(second, Console(file=terminal, width=200))
    assert "(1 of 1 stored before and reused)" in terminal.getvalue()
    assert second["ingest"]["reused"] == 1 and first["ingest"]["reused"] == 0


def test_eval_diff_refuses_what_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, huge = tmp_path / "notes.txt", tmp_path / "huge.json"
    text.write_text("not json")
    with huge.open("wb") as sparse:
        sparse.truncate(300 * 2**20)
    a_run = tmp_path / "run.json"
    a_run.write_text(json.dumps({"benchmark": "BEAM", "questions": []}))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"benchmark": "LoCoMo", "questions": []}))
    for before, after, error in (
        (text, a_run, f"{text}: not JSON"),
        (tmp_path, a_run, f"{tmp_path}: Is a directory"),
        (tmp_path / "missing.json", a_run, "No such file or directory"),
        (huge, a_run, f"{huge}: over 256 MiB, not a run's JSON"),
        (a_run, other, "not the same benchmark: BEAM and LoCoMo"),
        (a_run, a_run, "no questions answered by topica and topica in the runs"),
    ):
        assert main(["eval", "diff", str(before), str(after)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("topica: error: ") and err.count("\n") == 1 and error in err
