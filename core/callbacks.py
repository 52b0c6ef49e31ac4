"""Callback handlers that observe a run without changing it."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult


class LLMUsage(BaseCallbackHandler):
    """Counts chat-model calls (failed ones too) and the tokens their replies report.

    Pass it in a run's `callbacks`; nested graphs and subgraphs report to it as well.
    """

    run_inline = True
    """Counted in the caller's thread, so the totals are final when the run returns."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self.calls += 1

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        prompt = completion = 0
        for generations in response.generations:
            for generation in generations:
                if not isinstance(generation, ChatGeneration):
                    continue
                usage = getattr(generation.message, "usage_metadata", None)
                if usage:
                    prompt += usage.get("input_tokens", 0)
                    completion += usage.get("output_tokens", 0)
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion
