"""Stopping an answer while it is being written: the user's stop button reaches the model.

A caller that streams an answer to someone who can stop it (the bot, in a private chat)
opens the turn here under the turn's id and passes that id in `ResponseContext.turn_id`.
The responder reads its reply as a stream and ends it the moment the turn's event is set,
keeping what was written. A stop for a turn nobody opened (a late press, a turn already
answered) changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


class GenerationStops:
    """The stop events of the turns being answered right now, by turn id."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    @contextmanager
    def open(self, turn_id: str) -> Iterator[asyncio.Event]:
        """The turn's stop event while the block runs; the turn can no longer be stopped after."""
        event = self._events[turn_id] = asyncio.Event()
        try:
            yield event
        finally:
            if self._events.get(turn_id) is event:
                del self._events[turn_id]

    def event(self, turn_id: str | None) -> asyncio.Event | None:
        """The stop event of an open turn; None when the turn cannot be stopped."""
        return self._events.get(turn_id) if turn_id else None

    def stop(self, turn_id: str) -> bool:
        """Ask an open turn to stop; False when no such turn is being answered."""
        event = self._events.get(turn_id)
        if event is None:
            return False
        event.set()
        return True
