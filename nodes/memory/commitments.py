"""Commitments the Archivist finds ("пришлю отчёт в пятницу") become reminder offers.

Each commitment names the user's message it was said in and its time as the user said
it. The time is read like `/remind`'s (`core.when`), in the user's time zone, from the
moment the message was written; an offer is stored only for a message of the user's
own in the topics the call read, a time that reads, and one still ahead. Nothing is
scheduled here: the user's press on the offer does that (`app.offers`).
"""

from __future__ import annotations

import logging
from datetime import datetime

from pydantic import BaseModel

from core.errors import StoreError
from core.ports import Store
from core.records import TopicRow, parse_timestamp
from core.text import clip
from core.tracing import user_key
from core.when import parse_when

log = logging.getLogger(__name__)

WHEN_CHARS = 80
"""A longer "when" is not a time as the user said it: the commitment is skipped."""
REQUEST_CHARS = 300


class Commitment(BaseModel):
    text: str = ""
    """What to remind of, short, in the user's language ("send the report")."""
    when: str = ""
    """The time as the user said it ("в пятницу", "tomorrow at 10")."""
    message_id: int | None = None
    """The id of the user's message that says it."""


def offer_commitments(
    store: Store,
    user_id: int,
    topics: list[TopicRow],
    commitments: list[Commitment],
    timezone: str,
    now: datetime,
) -> int:
    """Store an offer for each commitment said in one of the user's messages of `topics`
    whose time reads and is after `now`; how many were stored (a repeated one is not)."""
    topic_ids = {topic["id"] for topic in topics}
    named = [c.message_id for c in commitments if c.message_id is not None]
    said_in = {
        message["id"]: message
        for message in store.messages.by_ids(user_id, named)
        if message["topic_id"] in topic_ids and message["role"] == "user"
    }
    offered = 0
    for commitment in commitments:
        message = said_in.get(commitment.message_id or 0)
        if message is None or not commitment.text.strip() or len(commitment.when) > WHEN_CHARS:
            continue
        try:
            found = parse_when(commitment.when, parse_timestamp(message["created_at"]), timezone)
        except (ValueError, OverflowError):  # WhenError, or a date the parser cannot hold
            continue
        if found.first_run <= now:
            continue
        try:
            added = store.offers.add(
                user_id,
                message["id"],
                clip(commitment.text, REQUEST_CHARS),
                commitment.when,
                found.first_run,
                timezone,
                found.rule,
            )
        except StoreError as error:
            log.warning("user %s: commitment refused: %s", user_key(user_id), error)
            continue
        offered += added is not None
    return offered
