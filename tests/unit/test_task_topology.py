"""Topology snapshot of the task graph: reminders skip the model, work goes through
prepare and the Tasker and its tool loop, and the Tasker's fallback edge is drawn and labelled."""

from __future__ import annotations

import pytest

from core.deps import Deps
from graphs.tasks import build_task_graph
from nodes.response.task_run import task_kind
from tests.support.topology import drawn_edges, edges

FALLBACK = "no_model / api_error / timeout / empty_reply"


def test_the_task_graph_has_exactly_the_expected_edges(deps: Deps) -> None:
    assert drawn_edges(build_task_graph(deps)) == edges(f"""
        __start__ -.-> remind
        __start__ -.-> prepare
        remind --> __end__
        prepare --> work
        work -. message .-> __end__
        work -. tool_calls .-> tools
        tools --> work
        work -. {FALLBACK} .-> work_offline
        work_offline --> __end__
    """)


@pytest.mark.parametrize(
    ("request_text", "kind"),
    [
        ("позвонить маме", "reminder"),
        ("про отчёт", "reminder"),
        ("call mum", "reminder"),
        ("выпить воды", "reminder"),
        ("summarise what I planned this week", "work"),
        ("check what I said about the dentist", "work"),
        ("подведи итоги недели", "work"),
        ("напомни, что я обещал Пете", "work"),
        ("найди, что я писал про отпуск", "work"),
    ],
)
def test_a_request_is_a_reminder_unless_it_asks_for_work(request_text: str, kind: str) -> None:
    assert task_kind(request_text) == kind
