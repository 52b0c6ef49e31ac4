"""Storing a user's message: the one place every caller (bot, command line, graph) does it."""

from __future__ import annotations

from typing import NamedTuple

from core.deps import Deps
from core.records import MessageRow, NewMessage


class StoredMessage(NamedTuple):
    row: MessageRow
    new: bool
    """False when a message with its external id was stored before (a redelivery)."""


def store_user_message(deps: Deps, user_id: int, message: NewMessage) -> StoredMessage:
    """Store `message` once per external id; its row, new or found."""
    rows = deps.indexer.store_live(user_id, [message])
    if rows:
        return StoredMessage(rows[0], True)
    stored = deps.store.messages.by_external_id(user_id, message["external_id"])
    assert stored is not None, "a message that was not added is stored already"
    return StoredMessage(stored, False)
