"""The one place chat models are created, keyed by agent name.

Tests and offline runs swap in fakes (or nothing) through `ModelRegistry.fixed`;
nodes only ever ask the registry.
"""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.language_models import BaseChatModel

from core.settings import AgentName, Settings


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
        from langchain_openai import ChatOpenAI

        api_key = self._settings.llm_api_key
        return ChatOpenAI(
            model=model_name,
            base_url=self._settings.llm_base_url,
            api_key=api_key.get_secret_value() if api_key else "not-needed",
            timeout=self._settings.llm_timeout_s,
            max_retries=self._settings.llm_max_retries,
        )
