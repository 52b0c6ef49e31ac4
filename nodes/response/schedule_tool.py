"""The responder's `schedule_task` tool: "remind me tomorrow at 9 to call mum" said in
chat creates a task for the current user (the user id comes from the tool's runtime,
never from the model), and the tool's result names the time it understood in the
user's time zone, for the answer to confirm. A "when" it cannot read comes back as a
tool error the model can correct; nothing is created."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime
from pydantic import Field

from core.context import ResponseContext
from core.deps import Deps
from core.records import parse_timestamp
from core.when import WhenError, zone
from nodes.shared.tasks import add_task

SCHEDULE_TASK_DESCRIPTION = (
    "Schedule a reminder or a task for the user, when they ask to be reminded or to have "
    "something done later. `when` in the user's words, Russian or English: 'через 2 часа', "
    "'завтра в 9:00', 'on Friday at 18:30', 'каждый понедельник в 10', 'every day at 9'. "
    "`request`: what to remind of or do, in the user's language, without the time."
)


def scheduled(deps: Deps, context: ResponseContext, when: str, request: str) -> str:
    now = parse_timestamp(context.now_iso) if context.now_iso else datetime.now(UTC)
    try:
        task = add_task(deps, context.user_id, when, request, now=now)
    except WhenError as error:
        raise ToolException(
            f"schedule_task could not read the time: {error}. Nothing was scheduled; "
            "try e.g. 'завтра в 9:00' or 'in 10 minutes'."
        ) from error
    local = parse_timestamp(task["next_run_at"]).astimezone(zone(task["timezone"]))
    repeats = f", repeating ({task['rule']})" if task["rule"] else ""
    return (
        f"Scheduled task {task['id']}: {request!r} at {local:%Y-%m-%d %H:%M} "
        f"{task['timezone']}{repeats}. Confirm this time to the user."
    )


def make_schedule_task_tool(deps: Deps) -> BaseTool:
    async def schedule_task(
        when: Annotated[str, Field(description="When, in the user's words.")],
        request: Annotated[str, Field(description="What to remind of or do.")],
        runtime: ToolRuntime[ResponseContext],
    ) -> str:
        return await asyncio.to_thread(scheduled, deps, runtime.context, when, request)

    return StructuredTool.from_function(
        coroutine=schedule_task,
        name="schedule_task",
        description=SCHEDULE_TASK_DESCRIPTION,
        handle_tool_error=True,
    )
