"""The search's full-text evidence with a long answer scored by its best passage, on a
real store of each engine (the scoring itself: tests/unit/test_text_passages.py)."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.search import hybrid_search
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(120)

QUESTION = "Which harbour did the ferry leave from?"
FILLER = "The weather report covered " + ", ".join(["clouds and wind over a calm sea"] * 16) + "."
"""One sentence of a paragraph too long to share a passage with the answering one."""
ANSWER = "The ferry left from the old harbour at dawn, an hour before the storm."
SHORT = 30
"""Short messages naming the ferry, as many naming the harbour: more than one page
(`message_hits_count`) of hits, each word in half the user's messages."""


TIMETABLE = "\n".join(f"Ferry {n} and harbour {n}." for n in range(40))
"""A long message among the best hits: a memory that holds long messages."""


def store_chat(deps: Deps, user_id: int, timetable: bool = True) -> tuple[list[int], int]:
    """The user's short messages about the ferry (and a long timetable of the ferries and
    harbours) and, after them, the assistant's long answer with the harbour in one
    paragraph of many: (the other messages' ids, the answer's id)."""
    answer = "\n".join([FILLER] * 15 + [ANSWER] + [FILLER] * 15)
    contents = [
        ("user", f"{word} note {n}: running late again.")
        for n in range(SHORT)
        for word in ("Ferry", "Harbour")
    ]
    contents += [("user", TIMETABLE)] if timetable else []
    rows = deps.indexer.store_messages(
        user_id, new_messages([*contents, ("assistant", answer)], prefix=f"u{user_id}-")
    )
    ids = [row["id"] for row in rows]
    deps.store.topics.save(user_id, [("Ferries", ids)])
    return ids[:-1], ids[-1]


def evidence(deps: Deps, context: ResponseContext) -> list[int]:
    return hybrid_search(deps, context, [QUESTION])["found"]["evidence"]["text_hits"][0]


def test_a_long_answer_past_the_stores_page_joins_the_evidence_by_its_passage(
    deps: Deps,
) -> None:
    short, answer = store_chat(deps, USER)
    _, theirs = store_chat(deps, OTHER)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    page = context.tuning.message_hits_count
    store_hits = [i for i, _ in deps.store.messages.search(USER, QUESTION, page)]
    # The store ranks the whole answer, its length sinking it below every short line;
    # the timetable is among them.
    assert len(store_hits) == page and answer not in store_hits
    assert set(store_hits) <= set(short) and short[-1] in store_hits
    found = evidence(deps, context)
    # By its passage (holding "harbour" and "ferry" at once) it comes before every line
    # that holds one of them, and the evidence stays one page of the user's own messages.
    lines = [found.index(i) for i in short[:-1] if i in found]
    assert found.index(answer) < min(lines)
    assert len(found) == page and set(found) <= {*short, answer}
    assert theirs not in found
    # The texts are read of the user's own messages only (with `longer_than`, the long ones).
    long = deps.store.messages.contents(USER, [answer, theirs, short[0]], longer_than=600)
    assert list(long) == [answer] and ANSWER in long[answer]
    assert deps.store.messages.contents(USER, [short[0], theirs]) == {
        short[0]: "Ferry note 0: running late again."
    }
    # The pool no deeper than the page: the store's hits as they are.
    assert evidence(deps, context.tuned(excerpt_text_pool=page)) == store_hits
    # Nor with long messages shown whole (no passages).
    assert evidence(deps, context.tuned(excerpt_passage_chars=0)) == store_hits


def test_a_memory_whose_best_hits_are_all_short_gets_the_stores_hits(deps: Deps) -> None:
    _, answer = store_chat(deps, USER, timetable=False)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    page = context.tuning.message_hits_count
    store_hits = [i for i, _ in deps.store.messages.search(USER, QUESTION, page)]
    # No message of the page is longer than a passage: no deeper search, the page as it is
    # (the long answer past it is not looked for).
    assert answer not in store_hits
    assert evidence(deps, context) == store_hits
