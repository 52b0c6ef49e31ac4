"""An answer is sent as at most `max_messages_per_answer` Telegram messages.

A model that writes far more than that (it ignores its limit, or the limit is high) is
cut where the messages end, with a note in the user's language, and the answer is kept
as it was sent: its text is what the messages say, and it is marked partial.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.render import html_to_plain, markdown_to_html
from bot.splitting import split_message
from bot.texts import texts_for
from core.deps import Deps
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.worlds import USER, build_response_world

pytestmark = pytest.mark.timeout(120)

CAP = 2
PARAGRAPH = " ".join(f"word{index}" for index in range(120))
LONG_ANSWER = "\n\n".join(f"**Part {index}.** {PARAGRAPH}" for index in range(30))


@pytest.mark.parametrize("language", ["en", "ru"])
async def test_a_long_answer_is_cut_at_the_cap_and_kept_as_sent(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, language: str
):
    user = FakeUser(USER, "Alice", language)
    server.script(reply(LONG_ANSWER))
    assert len(split_message(markdown_to_html(LONG_ANSWER), html=True)) > 2 * CAP
    async with running_bot(
        make_deps,
        [user],
        models={"responder": server.chat_model(timeout=30)},
        turn_wait_s=0.1,
        streaming=False,
        responder_max_tokens=8192,
        max_messages_per_answer=CAP,
    ) as running:
        await build_response_world(running.deps)
        running.api.send_text(user, "Tell me everything you know, at length.")
        sent = await running.api.wait_for_sent(user.id, CAP, within_s=60)
        store = running.deps.store
        [answer] = store.answers.all_of(USER)
        [kept] = store.messages.by_ids(USER, [answer["message_id"]])

    note = texts_for(language).answer_cut.format(limit=CAP)
    assert len(running.api.sent_messages(user.id)) == CAP
    parts = split_message(markdown_to_html(f"{kept['content']}\n\n{note}"), html=True)
    assert [message.result["text"] for message in sent] == [html_to_plain(p) for p in parts]
    assert sent[-1].result["text"].endswith(note)
    assert LONG_ANSWER.startswith(kept["content"])
    assert len(kept["content"]) > (CAP - 1) * 4096, "the messages are filled"
    assert answer["partial"] is True
