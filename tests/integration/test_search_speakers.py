"""The full-text search of a question naming one of the conversation's speakers, on a
real store (the name matching itself: tests/unit/test_speakers.py)."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.hits import searched_messages
from nodes.response.search import hybrid_search
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(60)


def hits_of(store, user_id: int, query: str, limit: int) -> list[tuple[int, float]]:
    """The message hits the search keeps for `query` (`searched_messages`)."""
    return searched_messages(store, user_id, query, limit)[1]


LINES = [
    ("Caroline", "Melanie! Guess what happened today, Melanie!"),
    ("Melanie", "Tell me everything."),
    ("Caroline", "Melanie, I got the job at the gallery downtown!"),
    ("Melanie", "I knew it! I have been painting lighthouses all week to celebrate."),
    ("Caroline", "Melanie, that would look perfect in my new flat."),
    ("Melanie", "Then one of them is yours."),
]


def store_chat(deps: Deps, user_id: int, lines: list[tuple[str, str]]) -> list[int]:
    messages = new_messages([text for _, text in lines])
    for message, (author, _) in zip(messages, lines, strict=True):
        message["role"], message["author"] = "user", author
    rows = deps.indexer.store_messages(user_id, messages)
    deps.store.topics.save(user_id, [("Painting", [row["id"] for row in rows])])
    return [row["id"] for row in rows]


def test_a_named_speakers_own_lines_are_found_without_the_name(deps: Deps) -> None:
    ids = store_chat(deps, USER, LINES)
    question = "What has Melanie been painting?"
    plain = [i for i, _ in deps.store.messages.search(USER, question, 10)]
    # Caroline addresses Melanie by name: the plain search finds her lines for the name.
    assert set(plain) == {ids[0], ids[2], ids[3], ids[4]}
    found = hits_of(deps.store, USER, question, 10)
    # Without the name, Melanie's own line is what the question's words find.
    assert [i for i, _ in found] == [ids[3]]
    # Both speakers named, or a question with no other word to search: the plain search.
    both = "What did Melanie and Caroline say about painting?"
    assert hits_of(deps.store, USER, both, 10) == deps.store.messages.search(USER, both, 10)
    alone = "Who is Melanie?"
    assert hits_of(deps.store, USER, alone, 10) == deps.store.messages.search(USER, alone, 10)
    # Only a capitalised word names anyone: written in lower case, the name is searched.
    lower = "what has melanie been painting?"
    assert hits_of(deps.store, USER, lower, 10) == deps.store.messages.search(USER, lower, 10)
    assert ids[0] in [i for i, _ in hits_of(deps.store, USER, lower, 10)]
    # The hybrid search hands these hits on to the excerpts.
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    assert (
        hybrid_search(deps, context, [question])["found"]["evidence"]["text_hits"][0][0] == ids[3]
    )


def test_authors_are_read_from_the_users_own_messages_only(deps: Deps) -> None:
    mine = store_chat(deps, USER, LINES)
    theirs = store_chat(deps, OTHER, [("Melanie", "I paint too, Melanie says."), ("Bob", "Ok")])
    authors = deps.store.messages.authors_of(USER, [*mine[:2], *theirs, 10**9])
    assert authors == {mine[0]: "Caroline", mine[1]: "Melanie"}
    assert deps.store.messages.authors_of(USER, []) == {}
