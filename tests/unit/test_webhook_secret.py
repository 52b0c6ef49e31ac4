"""The webhook's secret token: configured, random for one process, or derived alike by
every replica on a shared database (each replica's `setWebhook` replaces the last one's,
so they must all accept the same secret)."""

from __future__ import annotations

from pathlib import Path

from bot.webhook_secret import webhook_secret
from tests.support.services import isolated_settings

TOKEN = "123456:TEST-TOKEN"


def test_a_configured_secret_is_used() -> None:
    settings = isolated_settings(Path("d"), telegram_token=TOKEN, webhook_secret="s3cret")
    assert webhook_secret(settings) == "s3cret"


def test_one_process_gets_a_fresh_random_secret() -> None:
    settings = isolated_settings(Path("d"), telegram_token=TOKEN)
    assert webhook_secret(settings) != webhook_secret(settings)


def test_replicas_on_one_database_derive_the_same_secret() -> None:
    replica = {"telegram_token": TOKEN, "database_url": "postgresql://db/topica"}
    one = webhook_secret(isolated_settings(Path("a"), **replica))
    two = webhook_secret(isolated_settings(Path("b"), **replica))
    other_bot = webhook_secret(isolated_settings(Path("a"), **{**replica, "telegram_token": "9:X"}))
    assert one == two != other_bot
    assert TOKEN not in one and len(one) == 64
