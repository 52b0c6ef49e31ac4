"""The task graph: one due run of a scheduled task turned into the message to send.

    START ─reminder→ remind → END
      └─work→ prepare → work ─message→ END
                         ├─tool_calls→ tools → work
                         └─fallback→ work_offline → END

`remind` sends a plain reminder as written. `prepare` gives a task that asks for work the
seed's subagent context (system prompt, core facts, the task's last `TOPICA_TASK_HISTORY`
runs, the request; no auto-RAG, no sliding window); `work` is the Tasker
(`TOPICA_TASKER_MODEL`), which calls `search_history` as it needs, for at most
`max_tool_rounds` rounds, then answers with the tools off. Without a model, or when it
fails, `work_offline` sends the request saying a model is needed, with `task_fallback`
in state.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from core.context import TaskContext
from core.deps import Deps
from core.fallbacks import TaskFallback, edge_label
from core.retry import STORAGE_RETRY
from core.state import TaskInput, TaskState
from nodes.response.task_run import (
    make_prepare,
    make_task_tools,
    make_work,
    remind,
    route_task,
    work_offline,
)


def build_task_graph(deps: Deps) -> StateGraph:
    tools = make_task_tools(deps)
    builder = StateGraph(TaskState, input_schema=TaskInput, context_schema=TaskContext)
    builder.add_node("remind", remind)
    builder.add_node("prepare", make_prepare(deps), retry_policy=STORAGE_RETRY)
    builder.add_node(
        "work",
        make_work(deps, tools),
        destinations={
            END: "message",
            "tools": "tool_calls",
            "work_offline": edge_label(TaskFallback),
        },
    )
    builder.add_node("tools", ToolNode(tools))
    builder.add_node("work_offline", work_offline)
    builder.add_conditional_edges(START, route_task, {"remind": "remind", "prepare": "prepare"})
    builder.add_edge("remind", END)
    builder.add_edge("prepare", "work")
    builder.add_edge("tools", "work")
    builder.add_edge("work_offline", END)
    return builder
