"""Settings reach the run's context: a `ResponseContext` field takes the value of the
setting of its name (or the one `derived` maps to it), so `TOPICA_*` variables configure
every turn, and each default is written once."""

from __future__ import annotations

from dataclasses import fields

import pytest
from pydantic import ValidationError

from core.context import Budgets, ResponseContext
from core.settings import Settings

BUDGETS = [field.name for field in fields(Budgets)]


def test_every_layer_budget_is_a_setting_with_the_same_default():
    assert len(BUDGETS) == 8
    defaults = ResponseContext(user_id=1).budgets
    for name in BUDGETS:
        assert Settings.model_fields[f"{name}_budget_tokens"].default == getattr(defaults, name)


def test_environment_variables_reach_the_context(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOPICA_TOPICS_BUDGET_TOKENS", "1234")
    monkeypatch.setenv("TOPICA_WINDOW_BUDGET_TOKENS", "0")
    monkeypatch.setenv("TOPICA_RERANKER_ENABLED", "false")
    monkeypatch.setenv("TOPICA_RERANKER_MAX_TOPICS", "2")
    monkeypatch.setenv("TOPICA_RERANKER_TIMEOUT_S", "4.5")
    monkeypatch.setenv("TOPICA_RERANKER_MAX_TOOL_CALLS", "1")
    settings = Settings(_env_file=None)

    context = ResponseContext.from_settings(settings, user_id=7, turn_id="tg-7-3")

    assert (context.budgets.topics, context.budgets.window) == (1234, 0)
    assert context.reranker_enabled is False
    assert (context.rerank_max_topics, context.rerank_timeout_s) == (2, 4.5)
    assert context.rerank_max_tool_calls == 1
    assert (context.user_id, context.turn_id) == (7, "tg-7-3")


def test_streaming_settings_default_to_drafts_every_0_4_s():
    settings = Settings(_env_file=None)
    assert settings.streaming is True
    assert settings.draft_interval_s == 0.4


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("draft_interval_s", 0),
        ("topics_budget_tokens", -1),
        ("reranker_max_topics", 0),
        ("reranker_timeout_s", 0),
    ],
)
def test_nonsense_values_are_refused(name: str, value: float):
    with pytest.raises(ValidationError):
        Settings(_env_file=None, **{name: value})
