"""Respond ⇄ tools, then synthesis (seed 002): the responder's turn and where it goes next.

`respond` calls the responder with the tools bound; a reply with tool calls goes to the
`tools` node and back, until `max_tool_iterations` tool rounds are spent, after which
`synthesize` asks once more with the tools switched off. An empty reply (nothing left
after sanitising) is retried once. No configured model, a provider failure or a second
empty reply take the labelled edge to the memory-only answer, the reason in
`respond_fallback`. Both nodes route with `Command`; `route_after_tools` only reads state.

A turn someone can stop (`ResponseContext.turn_id` open in `Deps.stops`) reads the reply
as a stream; a stop ends it at once and what was written goes to `finalize` as the
answer, marked `answer_partial`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import ResponseContext
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.state import ResponseState
from nodes.response.finalize import sanitize
from nodes.shared.agent import call_agent, repairs_update
from nodes.shared.structured import message_text
from prompts import responder as prompt

EMPTY_REPLY_RETRIES = 1
ANSWERED_BY = {"respond": "responder", "synthesize": "synthesis"}

Next = Literal["tools", "respond", "synthesize", "offline_answer", "finalize"]


def reply_command(
    reply: AIMessage, state: ResponseState, node: Literal["respond", "synthesize"]
) -> Command[Next]:
    """Where a reply leads: a tool round, the answer, or a retry of an empty reply."""
    if reply.tool_calls and node == "respond":
        update = {"messages": [reply], "tool_rounds": state.get("tool_rounds", 0) + 1}
        return Command(goto="tools", update=update)
    text = message_text(reply)
    if not sanitize(text)[0]:
        empty_replies = state.get("empty_replies", 0) + 1
        if empty_replies > EMPTY_REPLY_RETRIES:
            update = {"empty_replies": empty_replies, "respond_fallback": "empty_reply"}
            return Command(goto="offline_answer", update=update)
        return Command(goto=node, update={"empty_replies": empty_replies})
    answer = AIMessage(text) if reply.tool_calls else reply
    update = {"messages": [answer], "answer": text, "answered_by": ANSWERED_BY[node]}
    return Command(goto="finalize", update=update)


def stopped_command(written: AIMessage, node: Literal["respond", "synthesize"]) -> Command[Next]:
    """The user stopped the answer while it was written: what was written is the answer,
    marked partial (possibly nothing, if the stop came before the first word)."""
    text = message_text(written)
    update = {"answer": text, "answer_partial": True, "answered_by": ANSWERED_BY[node]}
    if text:
        update["messages"] = [AIMessage(text)]
    return Command(goto="finalize", update=update)


async def responder_turn(
    deps: Deps,
    state: ResponseState,
    context: ResponseContext,
    request: Sequence[BaseMessage],
    node: Literal["respond", "synthesize"],
    bind: Callable[[BaseChatModel], Runnable] | None = None,
) -> Command[Next]:
    result = await call_agent(
        deps.models,
        "responder",
        request,
        user_id=context.user_id,
        parse=lambda reply: reply,
        bind=bind,
        stop=deps.stops.event(context.turn_id),
    )
    if isinstance(result, AgentFallback):
        update = {"respond_fallback": result.reason, "respond_error": result.detail or None}
        return Command(goto="offline_answer", update=update)
    command = (
        stopped_command(result.value, node)
        if result.stopped
        else reply_command(result.value, state, node)
    )
    repaired = repairs_update("responder", result)
    return (
        Command(goto=command.goto, update={**command.update, **repaired}) if repaired else command
    )


def make_respond(deps: Deps, tools: Sequence[BaseTool]):
    def bind(model: BaseChatModel) -> Runnable:
        return model.bind_tools(list(tools))

    async def respond(state: ResponseState, runtime: Runtime[ResponseContext]) -> Command[Next]:
        return await responder_turn(
            deps, state, runtime.context, state["messages"], "respond", bind
        )

    return respond


def make_synthesize(deps: Deps):
    async def synthesize(state: ResponseState, runtime: Runtime[ResponseContext]) -> Command[Next]:
        request = [*state["messages"], HumanMessage(prompt.SYNTHESIS)]
        return await responder_turn(deps, state, runtime.context, request, "synthesize")

    return synthesize


def route_after_tools(
    state: ResponseState, runtime: Runtime[ResponseContext]
) -> Literal["continue", "tool_budget_spent"]:
    if state.get("tool_rounds", 0) >= runtime.context.max_tool_iterations:
        return "tool_budget_spent"
    return "continue"
