"""The search asks the vector index only for the kinds of record the user has rows of (and
the passages' full-text index only once the user has passages), on a real store (both
engines) and a real Chroma: a user without documents, facts or people pays for no query
of them, and loses nothing by it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from app.media import keep_document
from core.context import ResponseContext
from core.deps import Deps
from core.ports import VECTOR_KINDS, VectorKind
from nodes.response.search import hybrid_search
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(60)

CAT_TALK = [
    "Marzipan the cat has kidney trouble, the vet put her on a renal diet.",
    "Poor Marzipan. Does she like the new food?",
]
QUESTION = "What does the vet say about Marzipan's kidneys?"
VET_NOTE = "Renal diet for Marzipan: wet food only, kidney check again in March."


class AskedKinds:
    """A real vector index that notes which kinds each search asks for."""

    def __init__(self, vectors: Any) -> None:
        self._vectors = vectors
        self.asked: list[VectorKind] = []

    def nearest(
        self, kind: VectorKind, user_id: int, vectors: Sequence[Any], limit: int
    ) -> list[list[tuple[int, float]]]:
        self.asked.append(kind)
        return self._vectors.nearest(kind, user_id, vectors, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._vectors, name)


def archived_cat_talk(deps: Deps, user_id: int) -> None:
    rows = deps.indexer.store_messages(user_id, new_messages(CAT_TALK))
    deps.store.topics.save(user_id, [("Marzipan's renal diet", [row["id"] for row in rows])])
    deps.indexer.index_all(user_id)


def test_holding_names_the_kinds_the_user_has_rows_of_and_no_one_elses(deps: Deps) -> None:
    store = deps.store
    assert store.holding(USER, VECTOR_KINDS) == set()
    archived_cat_talk(deps, OTHER)
    store.facts.add(OTHER, "Has a cat named Marzipan", "context", 60)
    store.people.add(OTHER, "Dr. Ivanova", bio="the vet")
    # Another user's rows of every kind but passages: still nothing of this user's.
    assert store.holding(OTHER, VECTOR_KINDS) == {"messages", "topics", "facts", "people"}
    assert store.holding(USER, VECTOR_KINDS) == set()

    deps.indexer.store_messages(USER, new_messages(["Hello there"]))
    assert store.holding(USER, VECTOR_KINDS) == {"messages"}
    archived_cat_talk(deps, USER)
    assert store.holding(USER, VECTOR_KINDS) == {"messages", "topics"}
    store.facts.add(USER, "Has a cat named Marzipan", "context", 60)
    assert store.holding(USER, ["facts", "people", "facts"]) == {"facts"}
    assert store.holding(USER, []) == set()
    assert store.holding(2**64, VECTOR_KINDS) == set()  # no row can have that id


def test_a_kind_the_user_has_no_rows_of_is_not_asked_and_nothing_is_lost(deps: Deps) -> None:
    archived_cat_talk(deps, USER)
    archived_cat_talk(deps, OTHER)
    deps.store.facts.add(OTHER, "Marzipan's vet is Dr. Ivanova", "context", 60)
    deps.indexer.index_all(OTHER)
    watched = AskedKinds(deps.vectors)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")

    update = hybrid_search(replace(deps, vectors=watched), context, [QUESTION])

    # Messages and topics only: no documents, facts or people of this user's to find.
    found = update["found"]
    assert sorted(watched.asked) == ["messages", "topics"]
    assert [c["summary"] for c in found["topics"]] == ["Marzipan's renal diet"]
    assert found["evidence"]["vector_hits"] and found["evidence"]["vector_hits"][0]
    assert found["facts"] == [] and found["people"] == []
    assert "search_fallback" not in update

    # The user's own fact: now the facts are asked, and the fact is found.
    fact = deps.store.facts.add(USER, "Marzipan's vet is Dr. Petrova", "context", 60)
    deps.indexer.index_all(USER)
    watched.asked.clear()
    found = hybrid_search(replace(deps, vectors=watched), context, [QUESTION])["found"]
    assert sorted(watched.asked) == ["facts", "messages", "topics"]
    assert [f["id"] for f in found["facts"]] == [fact["id"]]


def test_the_passages_full_text_index_is_asked_once_the_user_has_a_document(
    deps: Deps, monkeypatch: pytest.MonkeyPatch
) -> None:
    archived_cat_talk(deps, USER)
    [other_row] = deps.indexer.store_messages(
        OTHER, new_messages(["[document: vet.txt]"], prefix="doc")
    )
    keep_document(deps, OTHER, other_row["id"], "vet.txt", "text/plain", VET_NOTE)
    searched: list[int] = []
    search = deps.store.attachments.search

    def watched(user_id: int, text: str, limit: int) -> list[tuple[int, float]]:
        searched.append(user_id)
        return search(user_id, text, limit)

    monkeypatch.setattr(deps.store.attachments, "search", watched)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")

    # Another user's document: nothing of this user's to find there.
    hybrid_search(deps, context, [QUESTION])
    assert searched == []

    [row] = deps.indexer.store_messages(USER, new_messages(["[document: vet.txt]"], prefix="doc"))
    keep_document(deps, USER, row["id"], "vet.txt", "text/plain", VET_NOTE)
    deps.indexer.index_all(USER)
    hybrid_search(deps, context, [QUESTION])
    assert searched == [USER]
