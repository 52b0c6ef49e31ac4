"""Message grouping: several quick messages of one chat become one turn.

A per-chat debounce (seed 002's MessageGrouper): the first message of a quiet
chat opens a group and waits; every further message restarts the wait; once
the chat has been quiet for `wait_s` the group is closed and handed on as one
turn, its messages in Telegram order. Albums (one update per photo, same
`media_group_id`) arrive within milliseconds and so land in one group.

Quiet is counted from when messages arrive, not from when they reach the
grouper: each message is an `Arrival` from the moment its update comes in
(before it is stored, which embeds it and can take longer than the wait)
until it joins a group or is dropped, and a group never closes while an
arrival of its chat is pending, not even at shutdown.

Turns of one chat run one at a time, in the order their groups closed.
`flush()` (at shutdown) closes every open group at once and makes later
messages their own groups without waiting, so nothing received is left behind.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: aiogram's types load with the bot
    from aiogram.types import Message

RECHECK_S = 0.05
"""How often a group waiting only for messages being stored looks again."""


class Arrival:
    """One incoming message on its way to the grouper; `settle` is idempotent."""

    def __init__(self, grouper: MessageGrouper, chat_id: int) -> None:
        self._grouper = grouper
        self.chat_id = chat_id
        self._settled = False

    def settle(self) -> None:
        if not self._settled:
            self._settled = True
            self._grouper._settle(self.chat_id)


@dataclass
class _OpenGroup:
    messages: list[Message]
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class MessageGrouper:
    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self._open: dict[int, _OpenGroup] = {}
        self._arriving: Counter[int] = Counter()
        self._last_activity: dict[int, float] = {}
        self._turn_locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._flushing = False

    def _touch(self, chat_id: int) -> None:
        self._last_activity[chat_id] = asyncio.get_running_loop().time()

    def arrival(self, chat_id: int) -> Arrival:
        """A message of this chat came in; it is pending until it joins a group or is dropped."""
        self._arriving[chat_id] += 1
        self._touch(chat_id)
        return Arrival(self, chat_id)

    def _settle(self, chat_id: int) -> None:
        self._arriving[chat_id] -= 1
        if not self._arriving[chat_id]:
            del self._arriving[chat_id]
        self._touch(chat_id)
        if chat_id in self._open:
            self._open[chat_id].wake.set()

    async def collect(
        self, chat_id: int, message: Message, arrival: Arrival | None = None
    ) -> list[Message] | None:
        """The closed group if `message` opened it; None if it joined an open group."""
        if arrival is not None:
            arrival.settle()
        self._touch(chat_id)
        group = self._open.get(chat_id)
        if group is not None:
            group.messages.append(message)
            return None
        group = _OpenGroup([message])
        self._open[chat_id] = group
        loop = asyncio.get_running_loop()
        try:
            while True:
                remaining = self._last_activity[chat_id] + self.wait_s - loop.time()
                if not self._arriving[chat_id] and (self._flushing or remaining <= 0):
                    break
                group.wake.clear()
                with suppress(TimeoutError):
                    await asyncio.wait_for(group.wake.wait(), max(remaining, RECHECK_S))
        finally:
            del self._open[chat_id]
        return sorted(group.messages, key=lambda item: item.message_id)

    def turn_lock(self, chat_id: int) -> asyncio.Lock:
        """Held while a chat's turn runs: turns of one chat never overlap."""
        return self._turn_locks[chat_id]

    @property
    def open_groups(self) -> int:
        return len(self._open)

    def flush(self) -> None:
        """Close every open group now, and stop waiting from here on."""
        self._flushing = True
        for group in self._open.values():
            group.wake.set()
