"""Streaming answers into Telegram drafts, end to end.

aiogram talks HTTP to the fake Bot API server; the responder is the real `ChatOpenAI`
on the scripted OpenAI-compatible server, which streams server-sent events as the real
API does (a word every `pace_s`, tool calls as argument fragments). Both servers run on
127.0.0.1 in this process and record when each chunk left and each call arrived, so the
time from the model's first token to the first draft is measured here and printed.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.render import html_to_plain, markdown_to_html
from core.deps import Deps
from tests.support.bot_api_server import ApiCall, FakeUser, check_telegram_html
from tests.support.bot_harness import RunningBot, running_bot
from tests.support.openai_server import ScriptedOpenAI, StreamRecord, reply, tool_call
from tests.support.worlds import USER, build_response_world

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(USER, "Alice", "en")
INTERVAL_S = 0.4
QUESTION = "How long did the Postgres restore take on staging, and what was the plan?"
ANSWER = (
    "On **staging** the `pg_dumpall` dump and restore took *14 minutes*. The plan:\n\n"
    "1. dump with `pg_dumpall` from the Postgres 14 container\n"
    "2. restore into a **fresh volume** for Postgres 16\n"
    "3. book a 30 minute maintenance window for production\n\n"
    "```bash\npg_dumpall -U postgres > dump.sql\n```\n"
    "That was the whole upgrade, and nothing was lost on the way."
)
LONG_ANSWER = " ".join(f"word{index}" for index in range(300))


@pytest_asyncio.fixture
async def streaming_bot(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> AsyncIterator[RunningBot]:
    """The bot with its responder on the scripted server, over user 1's archived memory."""
    async with responder_bot(make_deps, server) as running:
        await build_response_world(running.deps)
        yield running


def responder_bot(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, **settings: Any
) -> AbstractAsyncContextManager[RunningBot]:
    """The bot for Alice, its responder on the scripted server, drafts every `INTERVAL_S`."""
    return running_bot(
        make_deps,
        [ALICE],
        models={"responder": server.chat_model(timeout=30)},
        **{"turn_wait_s": 0.1, "draft_interval_s": INTERVAL_S, **settings},
    )


def visible(call: ApiCall) -> str:
    return check_telegram_html(call.params["text"])


def stored_answers(running: RunningBot) -> list[str]:
    """The answers the bot stored (the archived world holds other assistant messages)."""
    store = running.deps.store
    ids = [answer["message_id"] for answer in store.answers.all_of(USER)]
    return [message["content"] for message in store.messages.by_ids(USER, ids)]


def answer_stream(server: ScriptedOpenAI) -> StreamRecord:
    """The stream that carried the answer's text (not a tool call)."""
    [stream] = [record for record in server.streams if record.first_content_at is not None]
    return stream


async def test_the_answer_grows_in_drafts_then_comes_as_one_message(
    streaming_bot: RunningBot, server: ScriptedOpenAI
):
    api = streaming_bot.api
    server.script(
        tool_call("search_history", {"query": "Postgres restore staging"}, pace_s=0.02),
        reply(ANSWER, pace_s=0.05),
    )
    question = api.send_text(ALICE, QUESTION)

    [final] = await api.wait_for_sent(ALICE.id, 1, within_s=60)
    drafts = api.drafts(ALICE.id)
    stream = answer_stream(server)

    assert len(drafts) >= 3, "several drafts while the answer was written"
    assert [call.status for call in api.calls_of("sendMessageDraft", ok_only=False)] == [200] * len(
        drafts
    ), "every draft was valid Telegram HTML"
    lengths = [len(visible(call)) for call in drafts]
    assert lengths == sorted(set(lengths)), "each draft shows more than the one before"
    for call in drafts:
        assert int(call.params["draft_id"]) == question["message_id"]
        assert (call.params["parse_mode"], call.params["can_stop"]) == ("HTML", "true")
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(drafts)]
    assert min(gaps) >= INTERVAL_S - 0.05, "no more often than the draft interval"
    assert drafts[0].at < stream.chunk_times[-1], "the first draft came while the model wrote"

    assert final.at > drafts[-1].at and api.drafts(ALICE.id) == drafts
    assert final.result["text"] == html_to_plain(markdown_to_html(ANSWER))
    assert final.params["reply_parameters"]["message_id"] == question["message_id"]
    [[button]] = final.params["reply_markup"]["inline_keyboard"]
    assert button["text"] == "Sources"
    assert stored_answers(streaming_bot) == [ANSWER]

    first_draft_s = drafts[0].at - stream.first_content_at
    print(
        f"\nfirst streamed token → first draft: {first_draft_s * 1000:.0f} ms; "
        f"{len(drafts)} drafts over {stream.chunk_times[-1] - stream.first_content_at:.2f} s "
        f"of streaming; last token → final message: "
        f"{(final.at - stream.chunk_times[-1]) * 1000:.0f} ms"
    )


async def test_a_stop_press_keeps_what_was_written_as_a_partial_answer(
    streaming_bot: RunningBot, server: ScriptedOpenAI
):
    api = streaming_bot.api
    server.script(reply(LONG_ANSWER, pace_s=0.03))
    question = api.send_text(ALICE, QUESTION)
    await api.wait_until(lambda: len(api.drafts(ALICE.id)) >= 2, what="two drafts")

    api.stop_generation(ALICE, question["message_id"])
    [final] = await api.wait_for_sent(ALICE.id, 1)
    await asyncio.sleep(0.3)  # a generation still running would show more drafts by now

    stream = answer_stream(server)
    assert not stream.completed and stream.chunks_sent < stream.chunks_total / 2
    [partial] = stored_answers(streaming_bot)
    assert final.result["text"] == partial
    assert LONG_ANSWER.startswith(partial) and len(partial) < len(LONG_ANSWER) / 2
    assert len(partial) >= len(visible(api.drafts(ALICE.id)[-1])), "nothing shown is lost"
    assert all(draft.at < final.at for draft in api.drafts(ALICE.id))
    [answer] = streaming_bot.deps.store.answers.all_of(USER)
    assert answer["partial"] is True
    assert len(api.sent_messages(ALICE.id)) == 1


@pytest.mark.parametrize("refusal", ["method not found", "server error mid-answer"])
async def test_refused_drafts_fall_back_to_the_final_message_alone(
    streaming_bot: RunningBot, server: ScriptedOpenAI, refusal: str
):
    api = streaming_bot.api
    server.script(reply(ANSWER, pace_s=0.05))
    if refusal == "method not found":
        api.drafts_supported = False
    api.send_text(ALICE, QUESTION)
    if refusal == "server error mid-answer":
        await api.wait_until(lambda: api.drafts(ALICE.id), what="a first draft")
        api.fail_next("sendMessageDraft", status=500)

    [final] = await api.wait_for_sent(ALICE.id, 1, within_s=60)
    await asyncio.sleep(0.3)

    attempts = api.calls_of("sendMessageDraft", ok_only=False)
    refused = [call for call in attempts if call.status != 200]
    assert len(refused) == 1, "a refused draft is not retried, and ends the drafts"
    assert attempts[-1] is refused[0]
    assert final.result["text"] == html_to_plain(markdown_to_html(ANSWER))
    assert len(api.sent_messages(ALICE.id)) == 1
    assert stored_answers(streaming_bot) == [ANSWER]


async def test_a_memory_only_answer_is_sent_at_once_without_drafts(
    make_deps: Callable[..., Deps],
):
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        await build_response_world(running.deps)
        running.api.send_text(ALICE, QUESTION)
        [final] = await running.api.wait_for_sent(ALICE.id, 1, within_s=60)

    assert running.api.calls_of("sendMessageDraft", ok_only=False) == []
    assert "14 minutes" in final.result["text"]
    assert final.params["reply_markup"]["inline_keyboard"][0][0]["text"] == "Sources"


async def test_with_streaming_off_the_answer_is_asked_whole_and_sent_once(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    server.script(reply(ANSWER))
    async with responder_bot(make_deps, server, streaming=False) as running:
        running.api.send_text(ALICE, QUESTION)
        [final] = await running.api.wait_for_sent(ALICE.id, 1, within_s=60)

    assert running.api.calls_of("sendMessageDraft", ok_only=False) == []
    assert not server.chat_requests[0].json_body.get("stream")
    assert final.result["text"] == html_to_plain(markdown_to_html(ANSWER))


@pytest.mark.benchmark
@pytest.mark.timeout(300)
async def test_benchmark_time_to_the_first_text_the_user_sees(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, tmp_path: Path
):
    """From the responder's request reaching the model to the first text on the user's
    screen: the first draft with streaming, the answer itself without; the model writes
    the same answer at the same speed (a word every 50 ms) both ways."""
    rounds = 8
    seen: dict[bool, list[float]] = {True: [], False: []}
    token_to_draft: list[float] = []
    for streaming in (True, False):
        async with responder_bot(
            make_deps,
            server,
            turn_wait_s=0.05,
            streaming=streaming,
            data_dir=tmp_path / f"streaming-{streaming}",
        ) as running:
            api = running.api
            for index in range(rounds):
                server.script(reply(ANSWER, pace_s=0.05))
                asked = len(server.chat_requests)
                api.send_text(ALICE, f"{QUESTION} ({index})")
                replies = await api.wait_for_sent(ALICE.id, index + 1, within_s=60)
                request = server.chat_requests[asked]
                shown = [call for call in api.drafts(ALICE.id) if call.at > request.at]
                seen[streaming].append((shown or replies[-1:])[0].at - request.at)
                if streaming:
                    token_to_draft.append(shown[0].at - server.streams[-1].first_content_at)
    with_drafts, whole = statistics.median(seen[True]), statistics.median(seen[False])
    token_ms = sorted(seconds * 1000 for seconds in token_to_draft)
    print(
        f"\nfirst text seen, median of {rounds}: {with_drafts * 1000:.0f} ms with drafts, "
        f"{whole * 1000:.0f} ms without ({whole / with_drafts:.1f}x later)"
        f"\nfirst streamed token → first draft: median {statistics.median(token_ms):.0f} ms, "
        f"max {token_ms[-1]:.0f} ms"
    )
    assert max(seen[True]) < min(seen[False]), "with drafts the first words come sooner"
