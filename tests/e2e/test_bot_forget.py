"""/forget end to end through the bot on loopback: a topic goes with the facts learnt from
it (the confirmation lists them), people can be forgotten, and the menu pages through
everything, its button data within Telegram's 64 bytes. And /help says when voice and
photos cannot be read here."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from bot.render import html_to_plain
from bot.texts import ENGLISH, RUSSIAN
from core.deps import Deps
from core.records import NewMessage
from tests.support.bot_api_server import ApiCall, FakeUser
from tests.support.bot_harness import RunningBot, buttons, command, running_bot

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")


async def press(running: RunningBot, user: FakeUser, menu: ApiCall, button: dict) -> ApiCall:
    """Press a button under the menu message; the edit the bot made in answer."""
    api = running.api
    before = len(api.calls_of("editMessageText"))
    api.press_button(user, menu.result, button["callback_data"])
    await api.wait_until(lambda: len(api.calls_of("editMessageText")) > before, what="an edit")
    return api.calls_of("editMessageText")[-1]


def indexed(deps: Deps, kind: str, user_id: int, ids: list[int]) -> None:
    deps.vectors.upsert(kind, user_id, ids, np.ones((len(ids), 512), dtype=np.float32) / 22.6)


def topic_with_facts(deps: Deps) -> tuple[dict, list[dict], dict]:
    messages = [
        NewMessage(external_id=f"m{i}", role="user", content=text, created_at="2026-03-01T10:00")
        for i, text in enumerate(["I moved to Lisbon in March.", "My new flat is in Alfama."])
    ]
    rows = deps.store.messages.add(ALICE.id, messages)
    [topic] = deps.store.topics.save(ALICE.id, [("Moving to Lisbon", [r["id"] for r in rows])])
    learnt = [
        deps.store.facts.add(ALICE.id, "Lives in Lisbon", "identity", 90, topic_id=topic["id"]),
        deps.store.facts.add(ALICE.id, "Flat in Alfama", "context", 60, topic_id=topic["id"]),
    ]
    other = deps.store.facts.add(ALICE.id, "Likes jazz", "context", 40)
    indexed(deps, "facts", ALICE.id, [f["id"] for f in [*learnt, other]])
    return topic, learnt, other


async def test_forgetting_a_topic_forgets_the_facts_learnt_from_it(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [ALICE]) as running:
        deps = running.deps
        topic, learnt, other = topic_with_facts(deps)

        menu = await command(running, ALICE, "/forget topic")
        [choice] = buttons(menu)
        assert "Moving to Lisbon" in choice["text"]
        confirm = await press(running, ALICE, menu, choice)
        text = html_to_plain(confirm.result["text"])
        assert "Lives in Lisbon" in text and "Flat in Alfama" in text
        assert "Likes jazz" not in text
        assert len(deps.store.facts.all_of(ALICE.id)) == 3, "nothing goes before the yes"

        yes, _ = buttons(confirm)
        await press(running, ALICE, menu, yes)
        assert [f["id"] for f in deps.store.facts.all_of(ALICE.id)] == [other["id"]]
        assert deps.store.topics.all_of(ALICE.id) == []
        ids = [f["id"] for f in [*learnt, other]]
        assert deps.vectors.vectors("facts", ALICE.id, ids).keys() == {other["id"]}
        history = [h for h in deps.store.facts.history(ALICE.id) if h["action"] == "delete"]
        assert {h["fact_id"] for h in history} == {f["id"] for f in learnt}
        assert {h["topic_id"] for h in history} == {topic["id"]}


async def test_a_person_can_be_forgotten(make_deps: Callable[..., Deps]) -> None:
    async with running_bot(make_deps, [ALICE, BORIS]) as running:
        deps = running.deps
        olga = deps.store.people.add(ALICE.id, "Olga", circle="sister")
        ivan = deps.store.people.add(ALICE.id, "Ivan", circle="colleague")
        theirs = deps.store.people.add(BORIS.id, "Olga", circle="friend")
        indexed(deps, "people", ALICE.id, [olga["id"], ivan["id"]])
        deps.store.facts.add(ALICE.id, "Likes jazz", "context", 40)

        menu = await command(running, ALICE, "/forget person")
        assert [b["text"] for b in buttons(menu)] == ["👤 Ivan (colleague)", "👤 Olga (sister)"]
        confirm = await press(running, ALICE, menu, buttons(menu)[1])
        assert html_to_plain(confirm.result["text"]) == "Forget this person?\n\nOlga (sister)"
        yes, _ = buttons(confirm)
        done = await press(running, ALICE, menu, yes)

        assert html_to_plain(done.result["text"]) == "Forgotten: Olga (sister)"
        assert [p["id"] for p in deps.store.people.all_of(ALICE.id)] == [ivan["id"]]
        assert deps.vectors.vectors("people", ALICE.id, [olga["id"], ivan["id"]]).keys() == {
            ivan["id"]
        }
        assert [p["id"] for p in deps.store.people.all_of(BORIS.id)] == [theirs["id"]]

        menu = await command(running, BORIS, "/forget люди")
        assert [b["text"] for b in buttons(menu)] == ["👤 Olga (friend)"]
        wrong = await command(running, ALICE, "/forget everything")
        assert wrong.result["text"] == ENGLISH.forget_unknown_kind


async def test_the_menu_pages_through_everything(make_deps: Callable[..., Deps]) -> None:
    async with running_bot(make_deps, [ALICE]) as running:
        deps = running.deps
        facts = [
            deps.store.facts.add(ALICE.id, f"Fact number {i:02d}", "context", 50) for i in range(19)
        ]
        people = [deps.store.people.add(ALICE.id, f"Person {i}") for i in range(3)]
        topic, learnt, other = topic_with_facts(deps)
        expected = {
            *(("fact", f["id"]) for f in [*facts, *learnt, other]),
            *(("person", p["id"]) for p in people),
            ("topic", topic["id"]),
        }

        menu = await command(running, ALICE, "/forget")
        assert menu.result["text"] == ENGLISH.forget_page.format(
            choose=ENGLISH.forget_choose, page=1, pages=4
        )
        seen: list[tuple[str, int]] = []
        page = menu
        for number in range(1, 5):
            items = [b for b in buttons(page) if b["callback_data"].startswith("forget:")]
            arrows = [b for b in buttons(page) if b["callback_data"].startswith("fpage:")]
            assert all(len(b["callback_data"].encode()) <= 64 for b in buttons(page))
            assert len(items) == (8 if number < 4 else len(expected) - 24)
            assert [a["text"] for a in arrows] == {1: ["▶"], 4: ["◀"]}.get(number, ["◀", "▶"])
            for item in items:
                _, _, kind, item_id = item["callback_data"].split(":")
                seen.append((kind, int(item_id)))
            if number < 4:
                page = await press(running, ALICE, menu, arrows[-1])
                assert f"page {number + 1} of 4" in page.result["text"]
        assert len(seen) == len(set(seen)) and set(seen) == expected

        [previous] = [b for b in buttons(page) if b["text"] == "◀"]
        back = await press(running, ALICE, menu, previous)
        assert "page 3 of 4" in back.result["text"]


async def test_help_says_when_voice_and_photos_cannot_be_read(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [ALICE, BORIS]) as running:
        help_en = await command(running, ALICE, "/help")
        assert ENGLISH.help_voice_unread.strip() in html_to_plain(help_en.result["text"])
        assert ENGLISH.help_photos_unread.strip() in html_to_plain(help_en.result["text"])
        help_ru = await command(running, BORIS, "/help")
        assert RUSSIAN.help_voice_unread.strip() in html_to_plain(help_ru.result["text"])

    async with running_bot(
        make_deps, [ALICE], data_dir=None, transcription_base_url="http://127.0.0.1:9/v1"
    ) as running:
        help_en = await command(running, ALICE, "/help")
        assert ENGLISH.help_voice_unread.strip() not in html_to_plain(help_en.result["text"])
        assert ENGLISH.help_photos_unread.strip() in html_to_plain(help_en.result["text"])
