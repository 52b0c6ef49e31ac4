"""What may ride on a webhook's response: one well-nested message, offered while the
request still waits (`bot.webhook`, `bot.sending.answer_as_one_message`)."""

from __future__ import annotations

# aiogram's types take seconds to build: they load when a test runs, not at collection, and
# this file's tests all run on one xdist worker (`ONE_WORKER` in tests/conftest.py).


def test_an_answer_that_is_one_well_nested_message_becomes_one_send_message():
    from aiogram.methods import SendMessage

    from bot.sending import answer_as_one_message

    method = answer_as_one_message(42, "Your starter is **Bubbles**.", reply_to=7)
    assert isinstance(method, SendMessage)
    assert (method.chat_id, method.text, method.parse_mode) == (
        42,
        "Your starter is <b>Bubbles</b>.",
        "HTML",
    )
    assert method.reply_parameters.message_id == 7


def test_long_or_misnested_answers_go_by_calls():
    from bot.sending import answer_as_one_message

    assert answer_as_one_message(42, "word " * 2000, reply_to=7) is None  # several messages
    # The converter crosses a quote and a code span here; Telegram could refuse it, and a
    # webhook response gets no error back to fall back to plain text on.
    assert answer_as_one_message(42, "> quote `code\nmore` end", reply_to=7) is None


def test_the_slot_takes_one_method_while_open_and_refuses_after():
    from bot.sending import answer_as_one_message
    from bot.webhook import WebhookReply

    async def sent() -> None:
        return None

    first = answer_as_one_message(1, "one", reply_to=1)
    second = answer_as_one_message(1, "two", reply_to=2)
    reply = WebhookReply()
    assert reply.offer(first, sent)
    assert not reply.offer(second, sent)  # one method per response
    assert reply.close() is first
    late = WebhookReply()
    late.close()  # aiogram answered the request (its 55 s deadline): the caller sends
    assert not late.offer(second, sent) and late.close() is None
