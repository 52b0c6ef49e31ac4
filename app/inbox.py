"""The chat's front door: each incoming message is received here before anything else.

`Inbox.receive` stores a message under its chat's lock and tells the caller what to do
with it: `stored` (answer it: new, or stored by an earlier run and never answered),
`duplicate` (a redelivery already handed to a turn, or already answered: drop it) or
`resend` (a redelivered question whose answer was stored but never sent: the answer is
sent again, once). An edit is applied under the same chat lock. An edit of a message not
stored yet (it overtook its message, or arrives before it in a backlog) is held, keyed by
the message's external id, and applied as soon as that message is stored; a held edit is
kept until its message lands or `capacity` newer ones push it out, the newest edit of a
message winning. Where replicas share a chat, `replicas` is the chat's database lock and
`stored_elsewhere` what other replicas received.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal

from app.media import edit_message
from core.deps import Deps
from core.records import MessageRow, NewMessage
from core.tracing import user_key
from nodes.shared.questions import store_user_message

log = logging.getLogger(__name__)

Outcome = Literal["stored", "duplicate", "resend"]

Resend = Callable[[MessageRow, Callable[[], Awaitable[None]]], Awaitable[None]]
"""Sends a stored answer to its chat, calling the second argument once it is sent."""


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


@dataclass(frozen=True)
class Receipt:
    outcome: Outcome
    row: MessageRow
    """The message as stored (now or before)."""


class SeenMessages:
    """Stored ids of the messages this process has handed to a turn (the newest
    `capacity`): a redelivery of one of them is a duplicate, whatever its turn's outcome.
    A message stored by an earlier process and never answered is not among them, so its
    redelivery is answered, as is the start-up pickup."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, stored: str) -> None:
        self._ids[stored] = None
        self._ids.move_to_end(stored)
        while len(self._ids) > self.capacity:
            self._ids.popitem(last=False)

    def __contains__(self, stored: object) -> bool:
        return stored in self._ids


class Inbox:
    def __init__(self, deps: Deps, capacity: int = 1_000) -> None:
        self.deps = deps
        self.capacity = capacity
        self._locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._held: OrderedDict[tuple[int, str], str] = OrderedDict()
        self.seen = SeenMessages()

    async def receive(
        self, chat_id: int, user_id: int, message: NewMessage, *, private: bool, resend: Resend
    ) -> Receipt:
        """Store `message` and say what becomes of it. Only a private chat's messages are
        answered, so only they are ever `resend` or handed on after a redelivery."""
        row, new = await self.store(chat_id, user_id, message)
        if new or not private:
            if private:
                self.seen.add(row["external_id"])
            return Receipt("stored" if new else "duplicate", row)
        if await self._resent(chat_id, user_id, row, resend):
            return Receipt("resend", row)
        if row["external_id"] in self.seen or not any(
            other["id"] == row["id"] for other in await self.unanswered(chat_id, user_id)
        ):
            log.info("message %s is already stored: a redelivery, skipped", row["external_id"])
            return Receipt("duplicate", row)
        log.warning(
            "message %s was stored but never answered (the bot stopped mid-turn): answering it now",
            row["external_id"],
        )
        self.seen.add(row["external_id"])
        return Receipt("stored", row)

    async def _resent(self, chat_id: int, user_id: int, row: MessageRow, resend: Resend) -> bool:
        """A redelivered question whose answer was stored but never sent (its process died
        in between): the stored answer is sent now, once (under the replicas' chat lock)."""
        async with self.replicas(chat_id):
            answer = await asyncio.to_thread(
                self.deps.store.answers.undelivered, user_id, row["external_id"]
            )
            if answer is None:
                return False
            log.warning(
                "the answer to message %s was stored but never sent: sending it now",
                row["external_id"],
            )

            async def delivered() -> None:
                await asyncio.to_thread(
                    self.deps.store.answers.mark_delivered, user_id, answer["id"]
                )

            await resend(answer, delivered)
            return True

    @asynccontextmanager
    async def replicas(self, chat_id: int) -> AsyncIterator[None]:
        """Held where replicas share the chat (its database lock); nothing otherwise."""
        if self.deps.chat_lock is None:
            yield
            return
        async with self.deps.chat_lock.hold(chat_id):
            yield

    async def unanswered(self, chat_id: int, user_id: int) -> list[MessageRow]:
        """The chat's stored messages that no answer covers, oldest first."""
        return await asyncio.to_thread(
            self.deps.store.messages.unanswered, user_id, chat_prefix(chat_id)
        )

    async def pickup(self, chat_id: int, user_id: int) -> list[MessageRow]:
        """At start-up: the chat's messages a stopped run left unanswered, marked seen so
        their redelivery is a duplicate."""
        rows = await self.unanswered(chat_id, user_id)
        for row in rows:
            self.seen.add(row["external_id"])
        return rows

    async def stored_elsewhere(
        self, chat_id: int, user_id: int, mine: Collection[str]
    ) -> list[MessageRow] | None:
        """Under `replicas`: the chat's unanswered messages other replicas received (they
        join this turn, as quick messages do), or None when another replica's turn has
        already answered `mine`. Always [] without replicas."""
        if self.deps.chat_lock is None:
            return []
        pending = await self.unanswered(chat_id, user_id)
        if not any(row["external_id"] in mine for row in pending):
            log.info("messages %s were answered by another replica", sorted(mine))
            return None
        return [row for row in pending if row["external_id"] not in mine]

    async def store(
        self, chat_id: int, user_id: int, message: NewMessage
    ) -> tuple[MessageRow, bool]:
        """Store `message` under its chat's lock: its row, and False when it was stored
        already. An edit held for it is applied before the lock is released."""
        async with self._locks[chat_id]:
            row, new = await asyncio.to_thread(store_user_message, self.deps, user_id, message)
            edited = self._held.pop((user_id, message["external_id"]), None)
            if edited is not None:
                log.info("user %s: an edit held for its message applied", user_key(user_id))
                edited_row = await asyncio.to_thread(
                    edit_message, self.deps, user_id, message["external_id"], edited
                )
                row = edited_row or row
        return row, new

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
