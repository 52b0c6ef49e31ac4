"""Rebuilding the vector index from SQLite (`topica reindex`), and noticing that the
configured embedder is not the one the index was built with. Real SQLite, Chroma and the
local encoder; a change of provider is the same encoder under another name, which is
what the index sees of a change (its collections are named after the embedder)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from app.index import embedder_notice, reindex
from app.memory import archive_user
from cli.main import main
from core.deps import Deps
from core.records import NewMessage
from stores.embedders import Embedder
from tests.support.messages import new_messages
from tests.support.services import local_deps

pytestmark = pytest.mark.timeout(180)

TALK = [
    "My sister Olga and I are planning a trip to Lisbon in May.",
    "Lisbon in May is lovely: try the trams and the pastéis de nata.",
    "Olga wants to see the Oceanarium too.",
    "It is one of the largest aquariums in Europe, worth half a day.",
]


async def test_after_a_change_of_embedder_reindex_brings_vector_recall_back(
    tmp_path: Path, embedder: Embedder
) -> None:
    data_dir = tmp_path / "data"
    before = local_deps(data_dir, embedder)
    before.indexer.store_messages(1, new_messages(TALK))
    before.indexer.store_messages(
        1,
        [
            NewMessage(
                external_id="a1",
                role="assistant",
                content="I found: Lisbon",
                created_at="2026-03-02T10:00:00+00:00",
                kind="memory_only_answer",
            )
        ],
    )
    await archive_user(before, 1, archive_all=True)
    assert embedder_notice(before) is None
    (topic,) = before.store.topics.all_of(1)
    before.close()

    renamed = Embedder(embedder.model, name="another-provider-model")
    after = local_deps(data_dir, renamed)
    try:
        notice = embedder_notice(after)
        assert notice is not None and embedder.name in notice and "topica reindex" in notice
        vector = after.embedder.encode_query("aquarium in Lisbon")
        assert after.vectors.query("messages", 1, vector, 5) == []

        result = await reindex(after)

        assert result["users"] == [
            {"user_id": 1, "messages": 4, "topics": 1, "facts": 0, "people": 0}
        ]
        assert embedder_notice(after) is None
        hits = [i for i, _ in after.vectors.query("messages", 1, vector, 5)]
        stored = {m["id"]: m for m in after.store.messages.all_of(1)}
        assert sorted(stored[i]["content"] for i in hits) == sorted(TALK)  # not the answer
        assert [i for i, _ in after.vectors.query("topics", 1, vector, 5)] == [topic["id"]]
    finally:
        after.close()


def test_the_cli_warns_of_another_embedder_and_reindex_rebuilds_every_user(
    tmp_path: Path, make_deps: Callable[..., Deps]
) -> None:
    data_dir = tmp_path / "data"
    deps = make_deps(data_dir=data_dir)
    for user in (1, 2):
        deps.indexer.store_messages(user, new_messages(TALK[: user + 1]))
    deps.store.vector_queue.set_embedder("an-old-embedder")
    deps.close()

    errors, output = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        assert main(["ask", "Where are we going in May?", "--data-dir", str(data_dir)]) == 0
    assert "topica: warning: the vector index was built with the embedder 'an-old-embedder'" in (
        errors.getvalue()
    )

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(output):
        assert main(["reindex", "--json", "--data-dir", str(data_dir)]) == 0
    result = json.loads(output.getvalue())
    # User 1 asked a question too (conversation) and got a memory-only answer (no vector).
    assert [(u["user_id"], u["messages"]) for u in result["users"]] == [(1, 3), (2, 3)]
    assert result["notice"] is None

    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        assert main(["ask", "And who is coming?", "--data-dir", str(data_dir)]) == 0
    assert "warning" not in errors.getvalue()
