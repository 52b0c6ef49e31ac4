"""`topica ingest` in its own process beside a running bot, on one local Chroma store.

The bot (in this process) has searched its vectors before the CLI writes, so its
embedded Chroma holds the collection's index in memory; its next turn must search what
the other process added, not the index as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from core.deps import Deps
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.soak import topica_process
from tests.support.worlds import USER, build_response_world

pytestmark = pytest.mark.timeout(240)

ALICE = FakeUser(USER, "Alice", "en")
NEW_SESSION = [
    ("user", "My cello teacher Ottoline Brandauer moved her lessons to Thursday evenings."),
    ("assistant", "Noted: cello lessons with Ottoline Brandauer are on Thursday evenings now."),
    ("user", "She also wants me to practise the Elgar concerto's first movement daily."),
]
QUESTION = "When are my cello lessons with Ottoline now?"


def write_session(path: Path) -> Path:
    lines = [
        {
            "id": f"cello{index}",
            "role": role,
            "content": content,
            "created_at": f"2026-04-0{index + 1}T18:00:00+00:00",
        }
        for index, (role, content) in enumerate(NEW_SESSION)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def nearest_ids(deps: Deps, text: str) -> set[int]:
    [hits] = deps.vectors.nearest("messages", USER, [deps.embedder.encode_query(text)], 50)
    return {record_id for record_id, _ in hits}


async def test_a_bot_searches_the_vectors_an_ingest_beside_it_wrote(
    make_deps: Callable[..., Deps], tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        deps, api = running.deps, running.api
        await build_response_world(deps)
        api.send_text(ALICE, "How long did the Postgres restore take on staging?")
        await api.wait_for_sent(ALICE.id, 1, within_s=60)
        before = nearest_ids(deps, QUESTION)

        ingest = topica_process(
            "ingest",
            str(write_session(tmp_path / "cello.jsonl")),
            "--data-dir",
            str(deps.settings.data_dir),
            "--user",
            str(USER),
        )
        _, errors = ingest.communicate(timeout=180)
        assert ingest.returncode == 0, errors

        new_ids = {
            row["id"]
            for row in deps.store.messages.all_of(USER)
            if row["external_id"].startswith("cello")
        }
        assert len(new_ids) == len(NEW_SESSION) and not new_ids & before
        api.send_text(ALICE, QUESTION)
        [_, answer] = await api.wait_for_sent(ALICE.id, 2, within_s=60)

        assert new_ids <= nearest_ids(deps, QUESTION), "the bot's index has the new vectors"
        assert "Thursday" in answer.result["text"]
        [turn] = [record for record in running.turns if QUESTION in record.text]
        recalled = {topic["id"] for topic in turn.result["topics"]}
        assert recalled & {row["topic_id"] for row in deps.store.messages.by_ids(USER, new_ids)}
    assert not [r for r in caplog.records if "vectors unavailable" in r.getMessage()]
