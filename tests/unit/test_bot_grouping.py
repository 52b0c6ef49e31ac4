"""The per-chat debounce alone, on aiogram Message objects and the event loop's clock."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.grouping import MessageGrouper

if TYPE_CHECKING:
    from aiogram.types import Message

# aiogram's types take seconds to build: they load when a test runs, not at collection, and
# this file's tests all run on one xdist worker (`ONE_WORKER` in tests/conftest.py).


def message(message_id: int, chat_id: int = 1) -> Message:
    from aiogram.types import Chat, Message

    return Message(
        message_id=message_id,
        date=datetime.now(UTC),
        chat=Chat(id=chat_id, type="private"),
        text=f"m{message_id}",
    )


async def test_quick_messages_join_the_open_group_in_telegram_order() -> None:
    grouper = MessageGrouper(wait_s=0.2)
    opener = asyncio.create_task(grouper.collect(1, message(2)))
    await asyncio.sleep(0.05)
    assert await grouper.collect(1, message(1)) is None
    await asyncio.sleep(0.1)
    assert await grouper.collect(1, message(3)) is None
    started = time.monotonic()
    group = await opener
    assert [item.message_id for item in group] == [1, 2, 3]
    assert time.monotonic() - started >= 0.15, "the last message restarted the wait"


async def test_chats_are_grouped_separately() -> None:
    grouper = MessageGrouper(wait_s=0.1)
    first, second = await asyncio.gather(
        grouper.collect(1, message(1, chat_id=1)), grouper.collect(2, message(1, chat_id=2))
    )
    assert [item.chat.id for item in first] == [1]
    assert [item.chat.id for item in second] == [2]


async def test_a_group_waits_for_a_message_still_being_stored() -> None:
    grouper = MessageGrouper(wait_s=0.05)
    opener = asyncio.create_task(grouper.collect(1, message(1)))
    arrival = grouper.arrival(1)
    await asyncio.sleep(0.3)
    assert not opener.done(), "an arrival of the chat is pending"
    assert await grouper.collect(1, message(2), arrival) is None
    assert [item.message_id for item in await opener] == [1, 2]


async def test_a_dropped_arrival_releases_the_group() -> None:
    grouper = MessageGrouper(wait_s=0.05)
    opener = asyncio.create_task(grouper.collect(1, message(1)))
    arrival = grouper.arrival(1)
    await asyncio.sleep(0.1)
    arrival.settle()
    arrival.settle()
    assert [item.message_id for item in await asyncio.wait_for(opener, 1)] == [1]


async def test_flush_closes_open_groups_at_once_and_later_ones_do_not_wait() -> None:
    grouper = MessageGrouper(wait_s=60)
    opener = asyncio.create_task(grouper.collect(1, message(1)))
    await asyncio.sleep(0.05)
    assert grouper.open_groups == 1
    grouper.flush()
    assert [item.message_id for item in await asyncio.wait_for(opener, 1)] == [1]
    late = await asyncio.wait_for(grouper.collect(1, message(2)), 1)
    assert [item.message_id for item in late] == [2]
    assert grouper.open_groups == 0


async def test_turn_lock_is_per_chat() -> None:
    grouper = MessageGrouper(wait_s=0.1)
    assert grouper.turn_lock(1) is grouper.turn_lock(1)
    assert grouper.turn_lock(1) is not grouper.turn_lock(2)
