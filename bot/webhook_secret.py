"""The webhook's secret token (kept apart from `bot.app`: it needs no Telegram client)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from core.settings import Settings


def webhook_secret(settings: Settings) -> str:
    """`TOPICA_WEBHOOK_SECRET`; without it, a random one for one process, or, on a shared
    database (replicas behind one URL, where each `setWebhook` replaces the last), one
    every replica derives alike from the bot's token."""
    if settings.webhook_secret:
        return settings.webhook_secret.get_secret_value()
    if settings.database_url is None:
        return secrets.token_urlsafe(32)
    token = settings.telegram_token.get_secret_value() if settings.telegram_token else ""
    return hmac.new(token.encode(), b"topica-webhook-secret", hashlib.sha256).hexdigest()
