"""The task graph's nodes: one due run of a scheduled task turned into the message to send.

A plain reminder ("позвонить маме") is sent as written. A task that asks for work
("every Monday summarise what I planned") gets the seed's subagent context (core facts,
the task's previous runs, the request, the `search_history` tool; no auto-RAG, no sliding
window) and the Tasker writes the message, calling the tool as it needs. Without a
model, or when it fails, `work_offline` sends the request itself, saying that a model is
needed, with the reason in state.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import ResponseContext, TaskContext
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.state import NO_CONTEXT, TaskKind, TaskState, UsedFact, UsedTopic
from core.text import neutralize
from nodes.response.tools import make_search_history_tool
from nodes.shared.agent import call_agent, text_of
from nodes.shared.structured import message_text
from prompts import tasker as prompt

WORK_WORDS = (
    "summar", "check", "find", "look", "review", "list", "collect", "gather", "tell",
    "what", "which", "how", "report", "remind me what",
    "подвед", "итог", "сводк", "провер", "найд", "найти", "посмотр", "перечисл", "собер",
    "расскаж", "что ", "какие", "какой", "напомни, что", "напомни что",
)  # fmt: skip
"""Word beginnings that make a request work for the Tasker rather than a reminder to
send as written (English and Russian)."""

NEEDS_MODEL = (
    "⏰ {request}\n\n"
    "(Для этой задачи нужна языковая модель, сейчас она недоступна. "
    "This task needs a language model, which is not available now.)"
)


def task_kind(request: str) -> TaskKind:
    """`work` when the request asks for something to be done, else `reminder`."""
    words = f" {' '.join(request.casefold().split())} "
    return "work" if any(f" {stem}" in words for stem in WORK_WORDS) else "reminder"


def route_task(state: TaskState) -> Literal["remind", "prepare"]:
    return "prepare" if task_kind(state["request"]) == "work" else "remind"


async def remind(state: TaskState) -> dict:
    """A reminder is sent as written; it needs no model."""
    return {"kind": "reminder", "message": state["request"], "task_fallback": None}


def previous_runs(deps: Deps, user_id: int, task_id: int, count: int) -> str:
    runs = deps.store.tasks.runs(user_id, task_id, count) if count else []
    blocks = [
        f'<run due="{run["due_at"]}">\n{neutralize(run["output"] or "")}\n</run>'
        for run in reversed(runs)
    ]
    return "\n".join(blocks) or prompt.NONE


def make_prepare(deps: Deps):
    def gather(context: TaskContext, state: TaskState) -> dict:
        user_id = context.user_id
        facts = deps.store.facts.core(user_id)
        now = context.now_iso or datetime.now(UTC).isoformat(timespec="seconds")
        system = prompt.SYSTEM.format(
            core_facts="\n".join(f"- {neutralize(f['content'])}" for f in facts) or prompt.NONE,
            now=now,
        )
        user = prompt.USER.format(
            previous_runs=previous_runs(deps, user_id, state["task_id"], context.task_history),
            request=neutralize(state["request"]),
        )
        return {
            "kind": "work",
            "messages": [SystemMessage(system), HumanMessage(user)],
            "core_facts": [fact["id"] for fact in facts],
        }

    async def prepare(state: TaskState, runtime: Runtime[TaskContext]) -> dict:
        """The Tasker's prompt: its rules, core facts, the previous runs and the request."""
        return await asyncio.to_thread(gather, runtime.context, state)

    return prepare


def make_task_tools(deps: Deps) -> list[BaseTool]:
    """The Tasker's tools: `search_history` over the run's user."""

    def scope(context: TaskContext) -> ResponseContext:
        return ResponseContext.from_settings(deps.settings, user_id=context.user_id)

    return [make_search_history_tool(deps, scope)]


def tool_calls_or_text(reply: AIMessage) -> AIMessage:
    """A reply that calls tools, or one with text (`EmptyReplyError` otherwise)."""
    if not reply.tool_calls:
        text_of(reply)
    return reply


WorkNext = Literal["__end__", "tools", "work_offline"]


def make_work(deps: Deps, tools: list[BaseTool]):
    async def work(state: TaskState, runtime: Runtime[TaskContext]) -> Command[WorkNext]:
        """The Tasker calls its tools (up to `max_tool_rounds` rounds, then answers with
        them switched off) and writes the run's message; its fallback takes the
        `work_offline` edge."""
        rounds = state.get("tool_rounds", 0)
        may_call = rounds < runtime.context.max_tool_rounds
        result = await call_agent(
            deps.models,
            "tasker",
            state["messages"],
            user_id=runtime.context.user_id,
            parse=tool_calls_or_text,
            bind=(lambda model: model.bind_tools(tools)) if may_call else None,
            stop=deps.stops.event(runtime.context.run_id),
        )
        if isinstance(result, AgentFallback):
            return Command(goto="work_offline", update={"task_fallback": result.reason})
        reply = result.value
        if reply.tool_calls and may_call:
            return Command(goto="tools", update={"messages": [reply], "tool_rounds": rounds + 1})
        text = message_text(reply).strip()
        if not text:
            return Command(goto="work_offline", update={"task_fallback": "empty_reply"})
        update = {"messages": [AIMessage(text)], "message": text, "task_fallback": None}
        return Command(goto="__end__", update=update)

    return work


def task_sources(state: TaskState) -> dict[str, Any]:
    """A work run's sources in the shape of an answer's (`finalize.answer_sources`): the
    topics its searches showed, the core facts of its prompt, the tools it called and the
    Tasker's fallback."""
    messages = state.get("messages") or []
    tools = [
        {"name": call["name"], "args": call["args"]}
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    ]
    shown: dict[int, UsedTopic] = {}
    for message in messages:
        found = (message.artifact or []) if isinstance(message, ToolMessage) else []
        for topic in found:
            used = {"reason": "search_history", "excerpt": None, "score": topic["score"]}
            shown.setdefault(topic["id"], UsedTopic(id=topic["id"], cut=False, **used))
    facts = [UsedFact(id=fact_id, core=True) for fact_id in state.get("core_facts") or []]
    fallback = state.get("task_fallback")
    return {
        **NO_CONTEXT,
        "topics": list(shown.values()),
        "facts": facts,
        "tools": tools,
        "fallbacks": {"tasker": fallback} if fallback else {},
    }


def tools_called(state: TaskState) -> list[str]:
    """The names of the tools the run called, in order."""
    return [tool["name"] for tool in task_sources(state)["tools"]]


async def work_offline(state: TaskState) -> dict:
    """The request itself, saying that the task needs a model."""
    return {"message": NEEDS_MODEL.format(request=state["request"])}
