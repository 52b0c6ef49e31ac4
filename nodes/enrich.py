"""Enrich: the Enricher agent rewrites the current message into one search query.

It sees the message, the last five messages before it and the date, under the rule not
to guess unknown words (seed 001: "мениск" must not become "MinIO"). Without a model,
or when the model fails or answers nothing, the raw text is the query.
"""

from __future__ import annotations

import asyncio
import logging

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graphs.context import ResponseContext
from graphs.deps import Deps
from graphs.state import ResponseState
from nodes.clock import prompt_date, turn_moment
from nodes.formatting import clip, transcript
from nodes.structured import message_text
from prompts import enricher as prompt
from stores.records import MessageRow
from stores.relational import RelationalStore

log = logging.getLogger(__name__)

RECENT_MESSAGES = 5
QUERY_CHARS = 500
ERROR_DETAIL_CHARS = 200


def messages_before(
    store: RelationalStore, user_id: int, message_id: int | None, limit: int
) -> list[MessageRow]:
    """The last `limit` messages of the current segment, without the current one."""
    segment = store.current_segment(user_id)
    recent = store.recent_messages(user_id, limit + 1, segment=segment)
    return [message for message in recent if message["id"] != message_id][-limit:]


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
                message=text,
            )
        ),
    ]


def make_enrich(deps: Deps):
    async def enrich(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        text = state["text"]
        model = deps.models.get("enricher")
        if model is None:
            return {"query": text, "enrich_fallback": "no_model"}
        context = runtime.context
        recent = await asyncio.to_thread(
            messages_before, deps.store, context.user_id, state.get("message_id"), RECENT_MESSAGES
        )
        try:
            reply = await model.ainvoke(enricher_prompt(text, recent, context))
        except Exception as error:  # any provider failure: search with the raw text
            log.warning(
                "user %s: enricher failed: %s: %s",
                context.user_id,
                type(error).__name__,
                clip(str(error), ERROR_DETAIL_CHARS),
            )
            return {"query": text, "enrich_fallback": "api_error"}
        query = clean_query(message_text(reply))
        if not query:
            return {"query": text, "enrich_fallback": "empty_reply"}
        return {"query": query, "enrich_fallback": None}

    return enrich
