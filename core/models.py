"""The one place chat models are created, keyed by agent name.

Tests and offline runs swap in fakes (or nothing) through `ModelRegistry.fixed`;
nodes only ever ask the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from core.settings import AgentName, Settings

if TYPE_CHECKING:  # LangChain loads with the first model, not with every command
    from langchain_core.language_models import BaseChatModel


def openai_chat_model(
    model: str, base_url: str | None, api_key: str, timeout_s: float, max_retries: int
) -> BaseChatModel:
    """A `ChatOpenAI` on its own HTTP client whose connections never outlive their loop."""
    import httpx
    from langchain_openai import ChatOpenAI

    from core.http import LoopScopedTransport

    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout_s,
        max_retries=max_retries,
        http_async_client=httpx.AsyncClient(transport=LoopScopedTransport(), timeout=timeout_s),
    )


class ModelRegistry:
    """Chat models per agent; `None` means that agent takes its non-LLM path."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._models: dict[AgentName, BaseChatModel | None] = {}
        self._fixed: Mapping[AgentName, BaseChatModel | None] | None = None

    @classmethod
    def fixed(
        cls, models: Mapping[AgentName, BaseChatModel | None], settings: Settings | None = None
    ) -> ModelRegistry:
        """A registry that hands out exactly these models (absent agents get none)."""
        registry = cls(settings or Settings(llm_model=None))
        registry._fixed = dict(models)
        return registry

    @property
    def settings(self) -> Settings:
        """What the endpoint honours and what each agent may ask for."""
        return self._settings

    def get(self, agent: AgentName) -> BaseChatModel | None:
        if self._fixed is not None:
            return self._fixed.get(agent)
        if agent not in self._models:
            self._models[agent] = self._create(agent)
        return self._models[agent]

    def name(self, agent: AgentName) -> str | None:
        model = self.get(agent)
        if model is None:
            return None
        return getattr(model, "model_name", None) or type(model).__name__

    def _create(self, agent: AgentName) -> BaseChatModel | None:
        model_name = self._settings.model_for(agent)
        if not model_name:
            return None
        api_key = self._settings.llm_api_key
        return openai_chat_model(
            model_name,
            self._settings.llm_base_url,
            api_key.get_secret_value() if api_key else "not-needed",
            self._settings.llm_timeout_s,
            self._settings.llm_max_retries,
        )
