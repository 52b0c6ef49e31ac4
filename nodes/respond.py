"""Respond ⇄ tools, then synthesis (seed 002): the responder's turn and its routing.

`respond` calls the responder with the tools bound; a reply with tool calls goes to the
`tools` node and back, until `max_tool_iterations` tool rounds are spent, after which
`synthesize` asks once more with the tools switched off. An empty reply (nothing left
after sanitising) is retried once; a second one, a provider failure or no configured
model take the edge to the memory-only answer. The routers only read state and context.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from graphs.context import ResponseContext
from graphs.deps import Deps
from graphs.state import ResponseState
from nodes.finalize import sanitize
from nodes.formatting import clip
from nodes.structured import message_text
from prompts import responder as prompt

log = logging.getLogger(__name__)

EMPTY_REPLY_RETRIES = 1
ERROR_DETAIL_CHARS = 200


def reply_update(
    reply: AIMessage, state: ResponseState, answered_by: Literal["responder", "synthesis"]
) -> dict:
    """What a reply changes: a tool round, an answer, or one more empty reply."""
    if reply.tool_calls and answered_by == "responder":
        return {"messages": [reply], "tool_rounds": state.get("tool_rounds", 0) + 1}
    text = message_text(reply)
    if not sanitize(text)[0]:
        empty_replies = state.get("empty_replies", 0) + 1
        update: dict = {"empty_replies": empty_replies}
        if empty_replies > EMPTY_REPLY_RETRIES:
            update["respond_fallback"] = "empty_reply"
        return update
    answer = AIMessage(text) if reply.tool_calls else reply
    return {"messages": [answer], "answer": text, "answered_by": answered_by}


def failure_update(error: Exception, user_id: int, node: str) -> dict:
    detail = f"{type(error).__name__}: {clip(str(error), ERROR_DETAIL_CHARS)}"
    log.warning("user %s: %s failed: %s", user_id, node, detail)
    return {"respond_fallback": "api_error", "respond_error": detail}


def make_respond(deps: Deps, tools: Sequence[BaseTool]):
    async def respond(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        model = deps.models.get("responder")
        if model is None:
            return {"respond_fallback": "no_model"}
        try:
            reply = await model.bind_tools(list(tools)).ainvoke(state["messages"])
        except Exception as error:  # the provider's failure is the memory-only edge
            return failure_update(error, runtime.context.user_id, "responder")
        return reply_update(reply, state, "responder")

    return respond


def make_synthesize(deps: Deps):
    async def synthesize(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        model = deps.models.get("responder")
        if model is None:
            return {"respond_fallback": "no_model"}
        try:
            reply = await model.ainvoke([*state["messages"], HumanMessage(prompt.SYNTHESIS)])
        except Exception as error:  # the provider's failure is the memory-only edge
            return failure_update(error, runtime.context.user_id, "synthesis")
        return reply_update(reply, state, "synthesis")

    return synthesize


def route_after_respond(
    state: ResponseState,
) -> Literal["tool_calls", "retry_empty", "fallback", "answer"]:
    if state.get("respond_fallback"):
        return "fallback"
    if state.get("answer"):
        return "answer"
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return "tool_calls"
    return "retry_empty"


def route_after_tools(
    state: ResponseState, runtime: Runtime[ResponseContext]
) -> Literal["continue", "tool_budget_spent"]:
    if state.get("tool_rounds", 0) >= runtime.context.max_tool_iterations:
        return "tool_budget_spent"
    return "continue"


def route_after_synthesis(state: ResponseState) -> Literal["retry_empty", "fallback", "answer"]:
    if state.get("respond_fallback"):
        return "fallback"
    if state.get("answer"):
        return "answer"
    return "retry_empty"
