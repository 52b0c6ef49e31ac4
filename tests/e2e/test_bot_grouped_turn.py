"""A grouped turn (bot/grouping.py) shows its earlier messages once: inside the merged
current message, not again in the sliding window. The bot runs against the fake Bot API
on loopback; its responder is a recording scripted model, so the test reads exactly what
the model was shown."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from langchain_core.messages import HumanMessage

from core.deps import Deps
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.models import recording_model

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")


def text_of(message) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


async def test_a_grouped_turns_earlier_messages_appear_once_in_the_prompt(
    make_deps: Callable[..., Deps],
) -> None:
    responder = recording_model("Noted.", "Feed her wet food twice a day.")
    async with running_bot(
        make_deps, [ALICE], models={"responder": responder}, turn_wait_s=0.5
    ) as running:
        api = running.api
        api.send_text(ALICE, "Hello there, a question about my cat soon.")
        await api.wait_for_sent(ALICE.id, 1)
        group = [
            api.send_text(ALICE, "My cat is called Mochi."),
            api.send_text(ALICE, "She is three years old."),
            api.send_text(ALICE, "What should I feed her?"),
        ]
        await api.wait_for_sent(ALICE.id, 2)

    prompt = responder.prompts[-1]
    human = [text_of(m) for m in prompt if isinstance(m, HumanMessage)]
    shown = "\n".join(text_of(m) for m in prompt)
    for message in group:
        assert shown.count(message["text"]) == 1, (message["text"], human)
    # The earlier single turn stays in the window; the group is the current message.
    assert human[0] == "Hello there, a question about my cat soon."
    assert human[-1] == "\n\n".join(message["text"] for message in group)
