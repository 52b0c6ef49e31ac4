"""The ledger of agent calls: each call's outcome, tokens and latency, counted in
`topica_agent_calls` too; what `topica bench models` and the real-model tier read."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from langchain_core.messages import AIMessage

from core.metrics import AGENT_CALLS
from core.settings import AgentName


@dataclass(frozen=True)
class AgentCall:
    """One agent call's outcome: `accepted`, `repaired` or the fallback's reason."""

    agent: AgentName
    outcome: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    repairs: tuple[str, ...] = ()
    """What was set right in the reply (`outcome` is then `repaired`)."""


class AgentLedger:
    """The latest agent calls of this process, each also counted in `topica_agent_calls`:
    what `topica bench models` reads."""

    def __init__(self, size: int = 100_000) -> None:
        self._calls: deque[AgentCall] = deque(maxlen=size)

    def record(
        self,
        agent: AgentName,
        outcome: str,
        reply: AIMessage | None,
        started: float,
        repairs: tuple[str, ...] = (),
    ):
        usage = (reply.usage_metadata if reply is not None else None) or {}
        call = AgentCall(
            agent,
            outcome,
            int(usage.get("input_tokens", 0)),
            int(usage.get("output_tokens", 0)),
            time.monotonic() - started,
            repairs,
        )
        self._calls.append(call)
        AGENT_CALLS.labels(agent, outcome).inc()

    def calls(self) -> list[AgentCall]:
        return list(self._calls)

    def clear(self) -> None:
        self._calls.clear()


LEDGER = AgentLedger()
