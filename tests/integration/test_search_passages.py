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


def store_chat(deps: Deps, user_id: int) -> tuple[list[int], int]:
    """The user's short messages about the ferry and, after them, the assistant's long
    answer with the harbour in one paragraph of many: (short ids, the answer's id)."""
    answer = "\n".join([FILLER] * 15 + [ANSWER] + [FILLER] * 15)
    contents = [
        ("user", f"{word} note {n}: running late again.")
        for n in range(SHORT)
        for word in ("Ferry", "Harbour")
    ]
    rows = deps.indexer.store_messages(
        user_id, new_messages([*contents, ("assistant", answer)], prefix=f"u{user_id}-")
    )
    ids = [row["id"] for row in rows]
    deps.store.topics.save(user_id, [("Ferries", ids)])
    return ids[:-1], ids[-1]


def evidence(deps: Deps, context: ResponseContext) -> list[int]:
    return hybrid_search(deps, context, [QUESTION])["found"]["evidence"]["text_hits"][0]


def test_a_long_answer_past_the_stores_page_leads_the_evidence_by_its_passage(
    deps: Deps,
) -> None:
    short, answer = store_chat(deps, USER)
    _, theirs = store_chat(deps, OTHER)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    page = context.tuning.message_hits_count
    store_hits = [i for i, _ in deps.store.messages.search(USER, QUESTION, page)]
    # The store ranks the whole answer, its length sinking it below every short line.
    assert len(store_hits) == page and answer not in store_hits
    assert set(store_hits) <= set(short)
    found = evidence(deps, context)
    # By its passage (the only one holding "harbour" and "ferry" at once) it leads, and
    # the evidence stays one page of the user's own messages.
    assert found[0] == answer
    assert len(found) == page and set(found) <= {*short, answer}
    assert theirs not in found
    # The pool no deeper than the page: the store's hits as they are.
    assert evidence(deps, context.tuned(excerpt_text_pool=page)) == store_hits
    # Nor with long messages shown whole (no passages).
    assert evidence(deps, context.tuned(excerpt_passage_chars=0)) == store_hits
