"""A live conversation's messages wait in the vector queue (issue 15, load), on both
engines and a real Chroma: a turn stores its messages without a Chroma write, and
`Indexer.catch_up` upserts the whole queue in one call once a queued message is out of
what a turn shows. Nothing is lost on the way: every message off the chat's screen is
indexed, and every other one is indexed or queued."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from app.turns import run_turn
from core.context import ResponseContext
from core.deps import Deps
from core.ports import VectorKind
from core.records import MEMORY_KIND
from tests.support.messages import new_messages
from tests.support.processes import free_port

pytestmark = pytest.mark.timeout(120)

USER = 1


class CountedUpserts:
    """A real vector index that notes each upsert: (kind, how many records)."""

    def __init__(self, vectors: Any) -> None:
        self._vectors = vectors
        self.upserts: list[tuple[VectorKind, int]] = []

    def upsert(self, kind: VectorKind, user_id: int, ids: Sequence[int], *args: Any) -> None:
        self.upserts.append((kind, len(ids)))
        self._vectors.upsert(kind, user_id, ids, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._vectors, name)


def counted(deps: Deps) -> CountedUpserts:
    spy = CountedUpserts(deps.vectors)
    deps.indexer.vectors = spy
    return spy


def queued(deps: Deps) -> list[int]:
    return deps.store.vector_queue.pending(USER, "messages")


def test_store_live_stores_and_queues_without_indexing(deps: Deps) -> None:
    spy = counted(deps)

    rows = deps.indexer.store_live(USER, new_messages(["Hello!", "My cat is called Marzipan."]))

    assert [m["content"] for m in deps.store.messages.all_of(USER)] == [
        "Hello!",
        "My cat is called Marzipan.",
    ]
    assert queued(deps) == [row["id"] for row in rows]
    assert spy.upserts == []
    assert deps.vectors.count("messages", USER) == 0


def test_catch_up_indexes_the_whole_queue_in_one_call_once_one_is_out_of_context(
    deps: Deps,
) -> None:
    spy = counted(deps)
    rows = deps.indexer.store_live(USER, new_messages(["One", "Two", "Three"]))
    ids = [row["id"] for row in rows]

    assert deps.indexer.catch_up(USER, set(ids)) is True
    assert spy.upserts == [], "all of them in context: nothing to do"
    assert queued(deps) == ids

    assert deps.indexer.catch_up(USER, set(ids[1:])) is True
    assert spy.upserts == [("messages", 3)], "the first is out: all three, in one call"
    assert queued(deps) == []
    assert deps.vectors.ids("messages", USER) == set(ids)

    assert deps.indexer.catch_up(USER, ()) is True
    assert spy.upserts == [("messages", 3)], "an empty queue costs no Chroma call"


def test_a_vector_store_down_keeps_the_queue(
    make_deps: Callable[..., Deps], caplog: pytest.LogCaptureFixture
) -> None:
    deps = make_deps(chroma_host="127.0.0.1", chroma_port=free_port())
    ids = [row["id"] for row in deps.indexer.store_live(USER, new_messages(["One", "Two"]))]

    with caplog.at_level(logging.WARNING, logger="stores.indexing"):
        assert deps.indexer.catch_up(USER, ()) is False

    assert queued(deps) == ids
    assert any("vectors unavailable" in record.getMessage() for record in caplog.records)


async def test_over_a_long_conversation_every_message_off_screen_is_indexed(deps: Deps) -> None:
    """Forty turns without a model: after each, every conversation message outside the
    newest window's worth is in the index, and every one is indexed or queued; the
    upserts come a window's worth at a time, not one a turn."""
    spy = counted(deps)
    window = ResponseContext.from_settings(deps.settings, user_id=USER).sliding_window_messages
    turns = 40

    for number in range(turns):
        await run_turn(deps, USER, f"Note {number}: the plumber comes on day {number + 1}.")

        stored = deps.store.messages.all_of(USER)
        conversation = {m["id"] for m in stored if m["kind"] == MEMORY_KIND}
        off_screen = {m["id"] for m in stored[:-window]} & conversation
        indexed = deps.vectors.ids("messages", USER)
        assert off_screen <= indexed, f"turn {number}: {sorted(off_screen - indexed)} unindexed"
        assert conversation == indexed | set(queued(deps)), f"turn {number}: a message lost"

    assert len(deps.store.messages.all_of(USER)) == 2 * turns
    assert 1 <= len(spy.upserts) <= turns // 8, spy.upserts
