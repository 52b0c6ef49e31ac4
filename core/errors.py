"""Errors that cross layers: what the stores refuse, and a vector store out of reach."""

from __future__ import annotations


class StoreError(Exception):
    """A request the store refuses (unknown id, id of another user, bad value)."""


class VectorStoreUnavailable(ConnectionError):
    """The vector store cannot be reached (a Chroma server that is down, say)."""


class SessionFormatError(ValueError):
    """A saved session that cannot be read; says which line and why."""


class ConfigurationError(Exception):
    """Settings a command cannot work with (a bot without a token, say)."""


class ServiceUnavailable(ConnectionError):
    """A service a command needs cannot be reached (the Telegram Bot API at start-up)."""


class ExportFormatError(SessionFormatError):
    """A chat export (Telegram, ChatGPT) that cannot be read; says where and why."""
