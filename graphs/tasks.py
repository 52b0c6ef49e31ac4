"""The task graph: one due run of a scheduled task turned into the message to send.

    START ─reminder→ remind → END
      └─work→ recall → work ─message→ END
                         └─fallback→ work_offline → END

`remind` sends a plain reminder as written. `recall` gives a task that asks for work the
seed's subagent context (core facts, the task's last `TOPICA_TASK_HISTORY` runs, memory
found for the request; no auto-RAG, no sliding window); `work` is the Tasker
(`TOPICA_TASKER_MODEL`); without it, or when it fails, `work_offline` sends the request
saying a model is needed, with `task_fallback` in state.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from core.context import TaskContext
from core.deps import Deps
from core.fallbacks import TaskFallback, edge_label
from core.retry import STORAGE_RETRY
from core.state import TaskInput, TaskState
from nodes.response.task_run import make_recall, make_work, remind, route_task, work_offline


def build_task_graph(deps: Deps) -> StateGraph:
    builder = StateGraph(TaskState, input_schema=TaskInput, context_schema=TaskContext)
    builder.add_node("remind", remind)
    builder.add_node("recall", make_recall(deps), retry_policy=STORAGE_RETRY)
    builder.add_node(
        "work",
        make_work(deps),
        destinations={END: "message", "work_offline": edge_label(TaskFallback)},
    )
    builder.add_node("work_offline", work_offline)
    builder.add_conditional_edges(START, route_task, {"remind": "remind", "recall": "recall"})
    builder.add_edge("remind", END)
    builder.add_edge("recall", "work")
    builder.add_edge("work_offline", END)
    return builder
