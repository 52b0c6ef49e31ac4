"""`topica eval locomo-dataset`: LoCoMo questions uploaded as a LangSmith dataset by a
real `topica` process through langsmith's client, to a LangSmith API on loopback."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.support.langsmith_server import langsmith_server
from tests.support.paths import ROOT
from tests.support.processes import untraced_environment

pytestmark = pytest.mark.timeout(120)


def turns(session: int, lines: list[str]) -> list[dict]:
    speakers = ("Ann", "Bob")
    return [
        {"speaker": speakers[index % 2], "dia_id": f"D{session}:{index + 1}", "text": text}
        for index, text in enumerate(lines)
    ]


def locomo(path: Path) -> Path:
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:00 pm on 1 May, 2023",
        "session_1": turns(1, ["I adopted a cat, Miso.", "Lovely!", "I row on Sundays."]),
    }
    qa = [
        {"question": "What is Ann's cat called?", "answer": "Miso", "evidence": ["D1:1"],
         "category": 4},
        {"question": "What does Ann do?", "answer": "rowing", "evidence": ["D1:1", "D1:3"],
         "category": 1},
        {"question": "Is Ann a pilot?", "adversarial_answer": "no", "evidence": ["D1:1"],
         "category": 5},
        {"question": "What is Ann like?", "answer": "kind", "evidence": [], "category": 3},
    ]  # fmt: skip
    path.write_text(json.dumps([{"sample_id": "conv-t", "conversation": conversation, "qa": qa}]))
    return path


async def upload(data: Path, data_dir: Path, url: str) -> dict:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "eval", "locomo-dataset", "--data", str(data),
        "--name", "locomo-test", "--data-dir", str(data_dir), "--json",
        env=untraced_environment() | {"LANGSMITH_ENDPOINT": url, "LANGSMITH_API_KEY": "k"},
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=100)
    assert process.returncode == 0, stderr.decode()[-2000:]
    return json.loads(stdout)


async def test_questions_with_evidence_become_examples_once(tmp_path: Path) -> None:
    data = locomo(tmp_path / "locomo.json")
    async with langsmith_server() as server:
        first = await upload(data, tmp_path / "data", server.url)
        second = await upload(data, tmp_path / "data", server.url)

    [dataset] = server.datasets.values()
    assert dataset["name"] == "locomo-test"
    assert first == {
        "dataset": "locomo-test", "dataset_id": dataset["id"], "created": 2, "already_there": 0
    }  # fmt: skip
    assert second == first | {"created": 0, "already_there": 2}
    examples = server.examples_of(dataset["id"])
    # The adversarial question (category 5) and the one without evidence are left out.
    assert [(e["inputs"], e["outputs"], e["metadata"], e["split"]) for e in examples] == [
        (
            {"question": "What is Ann's cat called?", "conversation": "conv-t"},
            {"evidence": ["D1:1"], "answer": "Miso"},
            {"key": "conv-t#0", "category": "single-hop"},
            "conv-t",
        ),
        (
            {"question": "What does Ann do?", "conversation": "conv-t"},
            {"evidence": ["D1:1", "D1:3"], "answer": "rowing"},
            {"key": "conv-t#1", "category": "multi-hop"},
            "conv-t",
        ),
    ]


async def test_without_an_api_key_it_says_so(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "eval", "locomo-dataset",
        "--data", str(locomo(tmp_path / "locomo.json")), "--name", "x",
        "--data-dir", str(tmp_path / "data"),
        env=untraced_environment(), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=100)
    assert process.returncode == 2
    assert "LANGSMITH_API_KEY is not set" in stderr.decode()
