"""The tracing configuration of a run: its thread and metadata name the graph and a stable
pseudonym of the user, never the user's id (tracing through a real CLI process:
tests/e2e/test_tracing.py)."""

from __future__ import annotations

from core.tracing import run_config, user_key

USER_ID = 918273645


def test_user_pseudonym_is_stable_and_not_the_id() -> None:
    assert user_key(USER_ID) == user_key(USER_ID)
    assert user_key(USER_ID) != user_key(USER_ID + 1)
    assert str(USER_ID) not in user_key(USER_ID)
    config = run_config("memory", USER_ID)
    assert config["configurable"]["thread_id"] == f"memory-{user_key(USER_ID)}"
    assert config["metadata"] == {"graph": "memory", "user": user_key(USER_ID)}
