"""Everyday questions ("How do I boil an egg?") against a small memory: the relevance gate
turns them away, where their best cosine clears the floor of a memory that size, because
memory holds too few of their words; the questions memory holds are kept. Real SQLite,
Chroma and encoder, the packaged (calibrated) profile; the reranker is a scripted model on
loopback, so its requests are counted."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.memory import archive_user
from app.turns import run_turn
from core.context import ResponseContext
from core.deps import Deps
from core.records import NewMessage
from nodes.response.auto_rag import relevant_earlier_messages
from nodes.response.gate import word_share
from nodes.response.offline_answer import WORDING
from nodes.response.search import topic_candidates
from stores.saved_sessions import read_session
from tests.support.demo import DemoArchive
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.paths import DEMO_QUESTIONS, DEMO_SESSION, THREE_SITTINGS

pytestmark = pytest.mark.timeout(180)

USER, OTHER = 1, 2
NOW = "2026-03-20T10:00:00+00:00"
EGG = "How do I boil an egg?"
RECIPE = "Boil the egg for nine minutes."


EVERYDAY = {
    EGG: "en",  # the example
    "How do I iron a shirt?": "en",  # not in the calibration set
    "Как сварить макароны?": "ru",
}
"""Everyday questions, each with the language its "nothing" is said in."""


@pytest.mark.parametrize("question", list(EVERYDAY))
async def test_an_everyday_question_gets_nothing_from_a_small_memory(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, question: str
) -> None:
    """The demo's memory (196 messages): the question is turned away in a new
    conversation, and a question that memory holds still reaches the reranker."""
    deps = make_deps(models={"reranker": server.chat_model()})
    deps.indexer.store_messages(USER, read_session(DEMO_SESSION))
    await archive_user(deps, USER, archive_all=True)
    # A new conversation (/new): nothing earlier in it for auto-RAG to quote.
    deps.store.sessions.start_new_segment(USER)

    result = await run_turn(deps, USER, question, now_iso=NOW)

    assert server.chat_requests == []
    assert result["fallback"] == "no_candidates"
    assert result["topics"] == []
    assert result["answer"] == WORDING[EVERYDAY[question]].nothing
    server.script(reply(json.dumps({"topics": []})))
    kept = await run_turn(deps, USER, "Что сказал ветеринар про Марципана?", now_iso=NOW)
    assert len(server.chat_requests) == 1
    assert kept["fallback"] != "no_candidates"


async def test_in_the_same_conversation_auto_rag_quotes_none_of_it_either(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    """As `topica demo` asks: in the conversation it archived, no earlier line is quoted
    for the egg (its nearest are 0.37 from a line about a film and 0.36 from one about a
    cat, no word shared), while a question sharing the conversation's words gets its line."""
    deps = make_deps(models={"reranker": server.chat_model()})
    deps.indexer.store_messages(USER, read_session(DEMO_SESSION))
    await archive_user(deps, USER, archive_all=True)
    segment = deps.store.sessions.current_segment(USER)
    context = ResponseContext(user_id=USER, now_iso=NOW)

    result = await run_turn(deps, USER, EGG, now_iso=NOW)

    assert result["answer"] == WORDING["en"].nothing
    assert relevant_earlier_messages(deps, context, EGG, segment, set()) == []
    worded = relevant_earlier_messages(deps, context, "Astrophage", segment, set())
    assert worded and "Astrophage" in worded[0]["content"]


async def test_the_word_share_counts_only_what_memory_has_archived(
    make_deps: Callable[..., Deps],
) -> None:
    deps = make_deps()
    deps.indexer.store_messages(USER, read_session(THREE_SITTINGS))
    await archive_user(deps, USER, archive_all=True)
    # The turn going on is stored and indexed before the search, and not archived.
    deps.indexer.store_messages(
        USER, [NewMessage(external_id="now", role="user", content=EGG, created_at=NOW)]
    )
    assert word_share(deps, USER, [EGG]) == 0.0
    assert word_share(deps, USER, ["Болит правое колено после длительной?"]) == 1.0
    assert word_share(deps, USER, ["How do I?"]) == 1.0  # no content word: words say nothing
    # Another user's archived words are not this user's.
    deps.indexer.store_messages(
        OTHER, [NewMessage(external_id="o", role="user", content=EGG, created_at=NOW)]
    )
    await archive_user(deps, OTHER, archive_all=True)
    assert word_share(deps, USER, [EGG]) == 0.0 < word_share(deps, OTHER, [EGG])
    # A document counts once the message that carried it is archived, and only then.
    now = deps.store.messages.by_external_id(USER, "now")
    assert now is not None
    deps.store.attachments.add(USER, now["id"], "eggs.txt", "text/plain", RECIPE, [RECIPE])
    assert word_share(deps, USER, [EGG]) == 0.0
    archived = deps.store.messages.all_of(USER)[0]
    deps.store.attachments.add(USER, archived["id"], "eggs.txt", "text/plain", RECIPE, [RECIPE])
    assert word_share(deps, USER, [EGG]) == 1.0
    assert word_share(deps, USER, [EGG], documents=False) == 0.0


@pytest.mark.parametrize("user_id", [1, 2])
def test_on_the_demo_memory_the_egg_is_turned_away_and_every_demo_question_kept(
    demo_archive: DemoArchive, user_id: int
) -> None:
    deps, context = demo_archive.deps, ResponseContext(user_id=user_id)
    assert topic_candidates(deps, context, [EGG]) == []
    # Its scores alone clear the floors of a memory this size: the words turn it away.
    assert topic_candidates(deps, context.tuned(word_share_floor=0.0), [EGG])
    questions = [entry["question"] for entry in json.loads(DEMO_QUESTIONS.read_text("utf-8"))]
    assert len(questions) == 20
    kept = [question for question in questions if topic_candidates(deps, context, [question])]
    assert kept == questions  # English and Russian, asked of a memory in both
