"""Text PostgreSQL refuses (NUL) and no encoder takes (lone surrogates) stored the same
way on both engines: a message, its edit and a document are always kept, the bad code
points each replaced by U+FFFD; and a turn on such a message is answered. A tool call's
NaN or infinity (which no JSON column takes) is kept as null, so its answer is stored."""

from __future__ import annotations

from collections.abc import Callable

from app.media import keep_document
from app.turns import answer_turn, compile_response_graph, run_turn
from app.views import answer_view
from core.deps import Deps
from core.records import NewMessage
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call

BAD = "before\x00after \ud800 end"
KEPT = "before\ufffdafter \ufffd end"


def test_messages_edits_and_documents_keep_their_text_on_both_engines(deps: Deps) -> None:
    store = deps.store
    [row] = store.messages.add(
        1,
        [NewMessage(external_id="m1", role="user", content=BAD, created_at="2026-01-01T10:00:00")],
    )
    assert row["content"] == KEPT
    edited = store.messages.rewrite(1, row["id"], f"edited {BAD}", edit=True)
    assert edited is not None and edited["content"] == f"edited {KEPT}"
    attachment = keep_document(deps, 1, row["id"], "a\x00.txt", "text/plain", BAD, index=False)
    assert attachment is not None
    assert attachment["content"] == KEPT and attachment["name"] == "a\ufffd.txt"
    assert [m["content"] for m in store.messages.all_of(1)] == [f"edited {KEPT}"]


async def test_a_turn_on_a_message_with_nul_is_stored_and_answered(
    make_deps: Callable[..., Deps],
) -> None:
    deps = make_deps()
    result = await run_turn(deps, 1, f"Remember this: {BAD}")
    assert result["answer"]
    stored = [m["content"] for m in deps.store.messages.all_of(1)]
    assert stored[0] == f"Remember this: {KEPT}"
    assert len(stored) == 2


async def test_a_tool_call_with_infinity_is_answered_and_stored_once(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"responder": server.chat_model()})
    server.script(tool_call("search_history", {"query": float("inf")}), reply("Nothing there."))
    graph = compile_response_graph(deps)
    result = await answer_turn(graph, deps, 1, "What did I say?")
    assert result["answer"] == "Nothing there."
    assert [m["role"] for m in deps.store.messages.all_of(1)] == ["user", "assistant"]
    view = answer_view(deps, 1)
    assert view is not None
    assert view["sources"]["tools"] == [{"name": "search_history", "args": {"query": None}}]
