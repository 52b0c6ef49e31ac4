"""Where a chat's incoming messages and their edits meet the store, one at a time per chat.

A message is stored under its chat's lock; an edit is applied under the same lock. An edit
of a message not stored yet (it overtook its message, which still waits behind others of
the chat, or arrives before it in a backlog) is held, keyed by the message's external id,
and applied as soon as that message is stored. A held edit is kept until its message
lands or `capacity` newer ones push it out; the newest edit of a message wins.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, defaultdict

from app.media import edit_message
from core.deps import Deps
from core.records import MessageRow, NewMessage
from core.tracing import user_key

log = logging.getLogger(__name__)


def stored_id(chat_id: int, message_id: int) -> str:
    """The stored id of a Telegram message: unique per chat, stable across redeliveries.
    It is also the id of the turn answering it (the turn's stop button names it)."""
    return f"tg-{chat_id}-{message_id}"


def chat_prefix(chat_id: int) -> str:
    """The prefix of every stored id of one chat's messages."""
    return f"tg-{chat_id}-"


def telegram_message_id(stored: str) -> int:
    """The Telegram message id in a stored id (`stored_id`'s inverse)."""
    return int(stored.rsplit("-", 1)[1])


class Inbox:
    def __init__(self, deps: Deps, capacity: int = 1_000) -> None:
        self.deps = deps
        self.capacity = capacity
        self._locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._held: OrderedDict[tuple[int, str], str] = OrderedDict()

    async def store(self, chat_id: int, user_id: int, message: NewMessage) -> bool:
        """Store `message` under its chat's lock; False when it was stored already. An
        edit held for it is applied before the lock is released."""
        async with self._locks[chat_id]:
            stored = await asyncio.to_thread(self.deps.indexer.store_live, user_id, [message])
            edited = self._held.pop((user_id, message["external_id"]), None)
            if edited is not None:
                log.info("user %s: an edit held for its message applied", user_key(user_id))
                await asyncio.to_thread(
                    edit_message, self.deps, user_id, message["external_id"], edited
                )
        return bool(stored)

    async def edit(
        self, chat_id: int, user_id: int, external_id: str, text: str
    ) -> MessageRow | None:
        """Apply an edit under its chat's lock: the edited row, or None when its message
        is not stored yet (the edit is then held for it)."""
        async with self._locks[chat_id]:
            row = await asyncio.to_thread(edit_message, self.deps, user_id, external_id, text)
            if row is None:
                self._held[(user_id, external_id)] = text
                self._held.move_to_end((user_id, external_id))
                while len(self._held) > self.capacity:
                    self._held.popitem(last=False)
            return row
