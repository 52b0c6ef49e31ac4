"""The node metrics handler runs in the run's own thread (issue 15, load): LangChain would
otherwise hand each of an async run's callback events to the default executor and await
it, a thread hop per event, queued behind the turns' blocking work in that same pool."""

from __future__ import annotations

import threading
from typing import Any, TypedDict
from uuid import UUID

from langgraph.graph import END, START, StateGraph

from core.metrics import GraphMetrics


class State(TypedDict):
    text: str


class ThreadsSeen(GraphMetrics):
    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any):
        self.threads.append(threading.get_ident())
        super().on_chain_start(serialized, inputs, run_id=run_id, **kwargs)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.threads.append(threading.get_ident())
        super().on_chain_end(outputs, run_id=run_id, **kwargs)


async def test_metrics_are_taken_in_the_run_s_own_thread() -> None:
    async def enrich(state: State) -> dict:
        return {"text": state["text"] + "!"}

    async def search(state: State) -> dict:
        return {"text": state["text"] + "?"}

    builder = StateGraph(State)
    builder.add_node("enrich", enrich)
    builder.add_node("search", search)
    builder.add_edge(START, "enrich")
    builder.add_edge("enrich", "search")
    builder.add_edge("search", END)
    seen = ThreadsSeen()

    result = await builder.compile().ainvoke({"text": "hi"}, config={"callbacks": [seen]})

    assert result == {"text": "hi!?"}
    assert len(seen.threads) >= 6, "the graph and both nodes started and ended"
    assert set(seen.threads) == {threading.get_ident()}
