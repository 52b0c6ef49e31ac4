"""The responder's tools (seed 002): search_history, manage_memory, get_topics_content,
schedule_task.

Every tool reads the user id from its `ToolRuntime` (the run's `ResponseContext`), never
from the model's arguments: a model can only ever search or change the current user's
memory. A refused request (a fact id of another user, a bad value) comes back to the
model as a tool error it can read and correct.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime
from pydantic import Field

from core.context import ResponseContext
from core.deps import Deps
from core.errors import StoreError
from core.found import TopicCandidate
from core.records import FactRow, FactType
from core.text import neutralize
from nodes.response.schedule_tool import make_schedule_task_tool
from nodes.response.search import topic_candidates
from nodes.response.topic_content import make_get_topics_content_tool, render_topics_content
from nodes.shared.fact_actions import (
    FactChange,
    IncompleteFactAction,
    apply_fact_change,
    index_memory,
)

SEARCH_RESULT_CHARS = 12_000
PAST_TENSE = {"add": "Added", "update": "Updated", "delete": "Deleted"}

SEARCH_HISTORY_DESCRIPTION = (
    "Search the user's whole archive of past conversations (all of them, not only this "
    "one) and return the best matching topics with their content. Use it when the recalled "
    "context does not answer the question; try other wordings or the other language."
)
MANAGE_MEMORY_DESCRIPTION = (
    "Add, update or delete a lasting fact about the user. add: needs content (and fact_type, "
    "importance 0-100). update: needs fact_id and what changes. delete: needs fact_id. "
    "Fact ids are the [id] numbers in <user_profile> and <facts>."
)


def search_history_found(
    deps: Deps, context: ResponseContext, query: str
) -> tuple[str, list[TopicCandidate]]:
    """The top topics for `query` in search order (no enrichment, no reranking): the text
    the model reads, and the topics it shows."""
    candidates = topic_candidates(deps, context, [query])[: context.rerank_max_topics]
    if not candidates:
        return f"Nothing in the archive matches: {neutralize(query)}", []
    listing = "\n".join(
        f"[ID:{candidate['id']}] {candidate['date']} | {neutralize(candidate['summary'])}"
        for candidate in candidates
    )
    content = render_topics_content(
        deps.store,
        context.user_id,
        [candidate["id"] for candidate in candidates],
        max_chars=SEARCH_RESULT_CHARS,
    )
    return f"Found {len(candidates)} topics:\n{listing}\n\n{content}", candidates


def search_history_result(deps: Deps, context: ResponseContext, query: str) -> str:
    """The text of `search_history_found`."""
    return search_history_found(deps, context, query)[0]


def make_search_history_tool(
    deps: Deps, scope: Callable[[Any], ResponseContext] = lambda context: context
) -> BaseTool:
    """`search_history` over the user of the run's context; `scope` turns the run's context
    (the responder's own, or another graph's with a `user_id`) into the search's. The
    tool's artifact is the list of topics it showed."""

    async def search_history(
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        runtime: ToolRuntime[Any],
    ) -> tuple[str, list[TopicCandidate]]:
        context = scope(runtime.context)
        return await asyncio.to_thread(search_history_found, deps, context, query)

    return StructuredTool.from_function(
        coroutine=search_history,
        name="search_history",
        description=SEARCH_HISTORY_DESCRIPTION,
        response_format="content_and_artifact",
    )


def fact_line(fact: FactRow) -> str:
    return f"[{fact['id']}] {fact['type']}, {fact['importance']}: {neutralize(fact['content'])}"


def make_manage_memory_tool(deps: Deps) -> BaseTool:
    store = deps.store

    def apply(user_id: int, change: FactChange) -> str:
        try:
            fact = apply_fact_change(store, user_id, change)
        except IncompleteFactAction as error:
            raise ToolException(str(error)) from error
        index_memory(deps.indexer, user_id, "facts")
        return f"{PAST_TENSE[change.action]} fact {fact_line(fact)}"

    async def manage_memory(
        action: Literal["add", "update", "delete"],
        runtime: ToolRuntime[ResponseContext],
        fact_id: Annotated[int | None, Field(description="The fact's [id]; update/delete.")] = None,
        content: Annotated[str | None, Field(description="The fact, one sentence.")] = None,
        fact_type: Annotated[
            FactType | None,
            Field(description="identity (who the user is), context or status (temporary)."),
        ] = None,
        importance: Annotated[int | None, Field(ge=0, le=100)] = None,
        reason: Annotated[str | None, Field(description="Why, in a few words.")] = None,
    ) -> str:
        user_id = runtime.context.user_id
        change = FactChange(
            action=action,
            fact_id=fact_id,
            content=content,
            fact_type=fact_type,
            importance=importance,
            reason=reason,
        )
        try:
            return await asyncio.to_thread(apply, user_id, change)
        except StoreError as error:
            raise ToolException(
                f"manage_memory refused: {error}. Only this user's own facts can be changed; "
                "use an [id] from <user_profile> or <facts>."
            ) from error

    return StructuredTool.from_function(
        coroutine=manage_memory,
        name="manage_memory",
        description=MANAGE_MEMORY_DESCRIPTION,
        handle_tool_error=True,
    )


def make_response_tools(deps: Deps) -> list[BaseTool]:
    """The responder's tools, in the order the model sees them."""
    return [
        make_search_history_tool(deps),
        make_manage_memory_tool(deps),
        make_get_topics_content_tool(deps),
        make_schedule_task_tool(deps),
    ]
