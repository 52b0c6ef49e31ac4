"""Isolation through the bot: `/forget` buttons forged with another user's ids.

The bot in-process against the fake Bot API server on loopback; every read and write
path of the memory is checked for isolation in tests/integration/test_isolation.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from app.memory import archive_user
from app.views import export_user
from bot.routers.callbacks import ForgetAction
from bot.texts import ENGLISH
from core.deps import Deps
from core.records import NewMessage
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.messages import BASE_TIME

STEP = timedelta(minutes=2)


ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")


async def test_forget_buttons_forged_with_another_users_ids_are_refused(
    make_deps: Callable[..., Deps],
):
    """`test_bot.py::test_forget_cannot_reach_another_users_memory` forges the final
    "yes" on a fact; here the topic is forged too, and the "ask" step (which would show
    the item's content) as well. Alice's own topic, pressed the same way, is forgotten."""
    async with running_bot(make_deps, [ALICE, BORIS], turn_wait_s=0.1) as running:
        api, deps = running.api, running.deps
        secret = "Boris keeps the spare key under the blue flowerpot"
        for user, prefix, texts in (
            (ALICE, "a", ["We planned the Zermatt ski trip.", "The pass is 92 francs."]),
            (BORIS, "b", [secret, "Nobody else knows about the flowerpot."]),
        ):
            deps.indexer.store_messages(
                user.id,
                [
                    NewMessage(
                        external_id=f"{prefix}{index}",
                        role="user",
                        content=text,
                        created_at=(BASE_TIME + index * STEP).isoformat(),
                    )
                    for index, text in enumerate(texts)
                ],
            )
            await archive_user(deps, user.id, archive_all=True)
        deps.store.facts.add(ALICE.id, "Likes tea", "context", 50)
        their_fact = deps.store.facts.add(
            BORIS.id, "Keeps a key under the flowerpot", "context", 50
        )
        [mine] = deps.store.topics.all_of(ALICE.id)
        [theirs] = deps.store.topics.all_of(BORIS.id)
        boris_before = export_user(deps, BORIS.id)
        vectors_before = {
            kind: deps.vectors.count(kind, BORIS.id) for kind in ("topics", "messages")
        }

        api.send_text(ALICE, "/forget")
        [menu] = await api.wait_for_sent(ALICE.id, 1)
        offered = [
            button["callback_data"]
            for row in menu.params["reply_markup"]["inline_keyboard"]
            for button in row
        ]
        assert ForgetAction(step="ask", kind="topic", item_id=mine["id"]).pack() in offered
        forged = [
            ForgetAction(step=step, kind=kind, item_id=item_id).pack()
            for kind, item_id in (("topic", theirs["id"]), ("fact", their_fact["id"]))
            for step in ("ask", "yes")
        ]
        # Ids past SQLite's 64-bit integers are unknown ids too (not an OverflowError).
        forged += [
            f"forget:{step}:{kind}:{10**23}"
            for step in ("ask", "yes")
            for kind in ("fact", "topic")
        ]
        own = [
            ForgetAction(step=step, kind="topic", item_id=mine["id"]).pack()
            for step in ("ask", "yes")
        ]
        for data in [*forged, *own]:
            edits = len(api.calls_of("editMessageText"))
            api.press_button(ALICE, menu.result, data)
            await api.wait_until(
                lambda count=edits: len(api.calls_of("editMessageText")) > count, what=data
            )

        edited = [call.result["text"] for call in api.calls_of("editMessageText")]
        assert edited[: len(forged)] == [ENGLISH.forget_gone] * len(forged)
        assert "Zermatt" in edited[len(forged)] and edited[-1].startswith("Forgotten:")
        assert not any("flowerpot" in text for text in edited)
        assert export_user(deps, BORIS.id) == boris_before
        assert {kind: deps.vectors.count(kind, BORIS.id) for kind in vectors_before} == (
            vectors_before
        )
        assert deps.store.topics.all_of(ALICE.id) == []
