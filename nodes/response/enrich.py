"""Enrich: the Enricher agent rewrites the current message into one search query.

It sees the message, the last five messages before it and the date, under the rule not
to guess unknown words (seed 001: "мениск" must not become "MinIO"). Without a model,
or when the model fails or answers nothing, the graph takes the `raw_query` edge: the
raw text is the query.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import ResponseContext
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.ports import Store
from core.records import MessageRow
from core.state import ResponseState
from core.text import clip, neutralize, transcript
from nodes.shared.agent import call_agent, repairs_update
from nodes.shared.clock import prompt_date, turn_moment
from nodes.shared.structured import EmptyReplyError, message_text
from prompts import enricher as prompt

RECENT_MESSAGES = 5
QUERY_CHARS = 500


def messages_before(
    store: Store, user_id: int, message_id: int | None, limit: int
) -> list[MessageRow]:
    """The last `limit` messages of the current segment, without the current one."""
    segment = store.sessions.current_segment(user_id)
    recent = store.messages.recent(user_id, limit + 1, segment=segment)
    return [message for message in recent if message["id"] != message_id][-limit:]


def query_of(reply: AIMessage) -> str:
    """The query a reply holds; raises `EmptyReplyError` when it holds none."""
    query = clean_query(message_text(reply))
    if not query:
        raise EmptyReplyError("the enricher's reply holds no query")
    return query


def clean_query(reply: str) -> str:
    """The query line of a reply: the first non-empty line, without quotes or a label."""
    for line in reply.splitlines():
        line = line.strip()
        if line.lower().startswith("query:"):
            line = line[len("query:") :]
        line = line.strip().strip("\"'«»`").strip()
        if line:
            return clip(line, QUERY_CHARS)
    return ""


def enricher_prompt(
    text: str, recent: list[MessageRow], context: ResponseContext
) -> list[SystemMessage | HumanMessage]:
    return [
        SystemMessage(prompt.SYSTEM),
        HumanMessage(
            prompt.USER.format(
                date=prompt_date(turn_moment(context)),
                recent=transcript(recent) or prompt.NO_RECENT,
                message=neutralize(text),
            )
        ),
    ]


def make_enrich(deps: Deps):
    async def enrich(
        state: ResponseState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["search", "raw_query"]]:
        text, context = state["text"], runtime.context

        async def request() -> list[BaseMessage]:
            recent = await asyncio.to_thread(
                messages_before,
                deps.store,
                context.user_id,
                state.get("message_id"),
                RECENT_MESSAGES,
            )
            return enricher_prompt(text, recent, context)

        result = await call_agent(
            deps.models, "enricher", request, user_id=context.user_id, parse=query_of
        )
        if isinstance(result, AgentFallback):
            return Command(goto="raw_query", update={"enrich_fallback": result.reason})
        update = {"query": result.value, "enrich_fallback": None}
        return Command(goto="search", update={**update, **repairs_update("enricher", result)})

    return enrich


async def raw_query(state: ResponseState) -> dict:
    """The Enricher's non-LLM path: the user's own words are the search query."""
    return {"query": state["text"]}
