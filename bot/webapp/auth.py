"""Telegram's Mini App authentication: the `initData` the client passes, signed by Telegram.

The secret key is HMAC-SHA256 of the bot token keyed with "WebAppData"; the signature
(`hash`) is the hex HMAC-SHA256, under that key, of every other field as `key=value`,
sorted by key and joined by newlines. The user id comes from the signed `user` field and
from nowhere else.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode


@dataclass(frozen=True)
class WebAppUser:
    id: int
    language: str
    """"ru" or "en" (from Telegram's `language_code`)."""


def secret_key(bot_token: str) -> bytes:
    return hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()


def data_check_string(fields: dict[str, str]) -> str:
    return "\n".join(f"{key}={fields[key]}" for key in sorted(fields) if key != "hash")


def validate_init_data(
    init_data: str, bot_token: str, max_age_s: int, now: float | None = None
) -> WebAppUser | None:
    """The user `init_data` is signed for; None when the signature is wrong or missing,
    `auth_date` is older than `max_age_s` (or in the future) or no user is named."""
    try:
        fields = dict(parse_qsl(init_data, keep_blank_values=True, strict_parsing=True))
    except ValueError:
        return None
    signature = fields.get("hash", "")
    expected = hmac.new(
        secret_key(bot_token), data_check_string(fields).encode(), hashlib.sha256
    ).hexdigest()
    if not signature or not hmac.compare_digest(signature, expected):
        return None
    try:
        age = (time.time() if now is None else now) - int(fields["auth_date"])
        user = json.loads(fields["user"])
        user_id = int(user["id"])
    except (KeyError, ValueError, TypeError):
        return None
    if not -60 <= age <= max_age_s:
        return None
    language = "ru" if str(user.get("language_code", "")).startswith("ru") else "en"
    return WebAppUser(user_id, language)


def sign_init_data(fields: dict[str, str], bot_token: str) -> str:
    """`fields` as Telegram would pass them, signed with the bot's token (tests, tools)."""
    signature = hmac.new(
        secret_key(bot_token), data_check_string(fields).encode(), hashlib.sha256
    ).hexdigest()
    return urlencode({**fields, "hash": signature})
