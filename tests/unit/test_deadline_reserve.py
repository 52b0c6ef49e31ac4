"""The deadline's reserve: the configured one, or the measured cost of the latest
memory-only answers (with a margin) when they took longer; never over half the deadline."""

from __future__ import annotations

from app.deadline import FallbackCost, model_budget_s


def test_the_reserve_is_the_configured_one_until_an_answer_took_longer():
    cost = FallbackCost(size=3)
    assert cost.reserve_s(5.0) == 5.0
    cost.record(2.0)
    assert cost.reserve_s(5.0) == 5.0
    cost.record(6.0)
    assert cost.reserve_s(5.0) == 6.0 * FallbackCost.MARGIN


def test_only_the_latest_answers_count():
    cost = FallbackCost(size=2)
    for seconds in (8.0, 1.0, 1.0):
        cost.record(seconds)
    assert cost.reserve_s(0.5) == 1.0 * FallbackCost.MARGIN


def test_the_models_keep_at_least_half_the_deadline():
    assert model_budget_s(90.0, 5.0) == 85.0
    assert model_budget_s(4.0, 5.0) == 2.0
    assert model_budget_s(4.0, FallbackCost.MARGIN * 10) == 2.0
