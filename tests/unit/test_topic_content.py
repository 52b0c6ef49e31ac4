"""What the reranker's `get_topics_content` tool reads and how it shows it (seed 001's
format): only the run user's topics, in the requested order, excerpts and a size cap."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from core.context import ResponseContext
from nodes.response.topic_content import (
    NOTHING_FOUND,
    make_get_topics_content_tool,
    render_topics_content,
    size_label,
)
from tests.support.worlds import (
    LARGE_MESSAGE_CHARS,
    OTHER_USER,
    RERANK_SECRET,
    USER,
    RerankWorld,
)


async def test_the_tool_reads_only_the_run_users_topics(world: RerankWorld):
    """The tool runs in a ToolNode of a plain graph: the user id comes from the run's
    context, whatever ids the model asks for."""
    builder = StateGraph(MessagesState, context_schema=ResponseContext)
    builder.add_node("tools", ToolNode([make_get_topics_content_tool(world.deps)]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile()
    call = AIMessage(
        content="",
        tool_calls=[
            {"name": "get_topics_content", "args": {"ids": [world.foreign["id"]]}, "id": "c1"}
        ],
    )

    as_user = await graph.ainvoke({"messages": [call]}, context=ResponseContext(user_id=USER))
    as_owner = await graph.ainvoke(
        {"messages": [call]}, context=ResponseContext(user_id=OTHER_USER)
    )

    (denied,) = [m for m in as_user["messages"] if isinstance(m, ToolMessage)]
    assert denied.content == NOTHING_FOUND
    assert str(world.foreign["id"]) not in denied.content
    (allowed,) = [m for m in as_owner["messages"] if isinstance(m, ToolMessage)]
    assert RERANK_SECRET in allowed.content


def test_topic_content_follows_the_seed_format_in_the_requested_order(world: RerankWorld):
    text = render_topics_content(
        world.deps.store, USER, [world.petrov["id"], world.foreign["id"], world.docker["id"]]
    )

    petrov, docker = text.split("\n\n=== Topic ")
    assert petrov == (
        f"=== Topic {world.petrov['id']} ===\n"
        f"Date: 2026-03-02 | 2 msgs | {size_label(world.petrov['size_chars'])}\n"
        "Topic: Petrov from ProjectX and his trip to Berlin\n\n"
        "[User (Alexei) (09:00)]: Remember Petrov from ProjectX?\n"
        "[Assistant (09:01)]: Yes, he led the Berlin migration."
    )
    assert docker.startswith(f"{world.docker['id']} ===\n")
    assert RERANK_SECRET not in text


def test_topic_content_uses_excerpts_and_respects_the_size_cap(world: RerankWorld):
    ids = [world.thesis["id"], world.vllm["id"]]
    with_excerpt = render_topics_content(
        world.deps.store, USER, ids, excerpts={world.thesis["id"]: "[User]: the methods chapter"}
    )
    # A topic shown in part has the short header: id and date, no summary or size.
    assert f"=== Topic {world.thesis['id']} (excerpt) ===\nDate: " in with_excerpt
    assert "The long thesis discussion" not in with_excerpt and "~26K chars" not in with_excerpt
    assert "[User]: the methods chapter" in with_excerpt
    assert "t" * 100 not in with_excerpt
    assert "Use tensor parallel 2 and fp8 weights." in with_excerpt

    small_first = [world.vllm["id"], world.thesis["id"]]
    vllm_alone = render_topics_content(world.deps.store, USER, small_first[:1])
    for cap in (len(vllm_alone) + 200, 20_000, 5_000, len(vllm_alone)):
        capped = render_topics_content(world.deps.store, USER, small_first, max_chars=cap)
        assert len(capped) <= cap
        assert capped.startswith(vllm_alone)
    cut = render_topics_content(world.deps.store, USER, small_first, max_chars=20_000)
    assert cut.endswith("[… 1 more message not shown: size limit]")
    assert "t" * LARGE_MESSAGE_CHARS in cut and "a" * 100 not in cut
    headers_only = render_topics_content(
        world.deps.store, USER, small_first, max_chars=len(vllm_alone) + 200
    )
    assert headers_only.endswith(
        "Topic: The long thesis discussion\n\n[… 2 more messages not shown: size limit]"
    )
    assert render_topics_content(world.deps.store, USER, small_first, max_chars=0) == ""


def test_size_labels():
    assert size_label(800) == "~800 chars"
    assert size_label(16_200) == "~16K chars"
    assert size_label(47_000) == "~47K chars"
