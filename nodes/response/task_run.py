"""The task graph's nodes: one due run of a scheduled task turned into the message to send.

A plain reminder ("позвонить маме") is sent as written. A task that asks for work
("every Monday summarise what I planned") gets the seed's subagent context (core facts,
the task's previous runs, what memory search finds for the request; no sliding window)
and the Tasker writes the message. Without a model, or when it fails, `work_offline`
sends the request itself, saying that a model is needed, with the reason in state.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import ResponseContext, TaskContext
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.state import TaskKind, TaskState
from core.text import neutralize
from nodes.response.tools import search_history_result
from nodes.shared.agent import call_agent
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


def route_task(state: TaskState) -> Literal["remind", "recall"]:
    return "recall" if task_kind(state["request"]) == "work" else "remind"


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


def make_recall(deps: Deps):
    def gather(context: TaskContext, state: TaskState) -> dict:
        user_id = context.user_id
        search = ResponseContext.from_settings(deps.settings, user_id=user_id)
        facts = deps.store.facts.core(user_id)
        now = context.now_iso or datetime.now(UTC).isoformat(timespec="seconds")
        system = prompt.SYSTEM.format(
            core_facts="\n".join(f"- {neutralize(f['content'])}" for f in facts) or prompt.NONE,
            now=now,
        )
        user = prompt.USER.format(
            previous_runs=previous_runs(deps, user_id, state["task_id"], context.task_history),
            memory=search_history_result(deps, search, state["request"]),
            request=neutralize(state["request"]),
        )
        return {"kind": "work", "system": system, "context": user}

    async def recall(state: TaskState, runtime: Runtime[TaskContext]) -> dict:
        """The Tasker's context: core facts, previous runs, memory found for the request."""
        return await asyncio.to_thread(gather, runtime.context, state)

    return recall


def make_work(deps: Deps):
    async def work(
        state: TaskState, runtime: Runtime[TaskContext]
    ) -> Command[Literal["__end__", "work_offline"]]:
        """The Tasker writes the run's message; its fallback takes the `work_offline` edge."""
        request = [SystemMessage(state["system"]), HumanMessage(state["context"])]
        result = await call_agent(deps.models, "tasker", request, user_id=runtime.context.user_id)
        if isinstance(result, AgentFallback):
            return Command(goto="work_offline", update={"task_fallback": result.reason})
        return Command(goto="__end__", update={"message": result.value, "task_fallback": None})

    return work


async def work_offline(state: TaskState) -> dict:
    """The request itself, saying that the task needs a model."""
    return {"message": NEEDS_MODEL.format(request=state["request"])}
