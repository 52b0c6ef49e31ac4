"""Everything the user says becomes memory (issue 14), end to end through the bot: aiogram
talking HTTP to the fake Bot API on loopback, a scripted transcription endpoint, real
SQLite, Chroma and encoder, the memory graph archiving, then a later question in a new
conversation recalling what a voice message said, what a text document and a PDF held,
and what an edited message says now (never what it said before).

No chat model is configured: answers are the memory-only answer, which quotes what was
recalled, so what memory kept is visible in the reply itself.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.media import split_passages
from app.memory import archive_user
from app.views import export_user
from bot.render import html_to_plain
from bot.texts import ENGLISH
from core.deps import Deps
from tests.e2e.test_bot import small_pdf
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import RunningBot, running_bot
from tests.support.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.timeout(120)

ALICE = FakeUser(101, "Alice", "en")

VOICE = b"OggS" + bytes(range(256)) * 3
TRANSCRIPT = "Remember that my passport expires on the ninth of March, I must renew it."
LEASE = (
    "Apartment lease, Rua Augusta 12.\n\n"
    "The monthly rent is 950 euros, due on the fifth day of each month.\n\n"
    "The landlord, Mr Okafor, lives on the ground floor and keeps the spare key.\n"
)
PDF_TEXT = "Vaccination record: tetanus booster given 2024, next one due 2034"
FILLER = [
    "I started learning to bake sourdough bread last week.",
    "Our team switched the office coffee machine to an espresso one.",
]


async def say(running: RunningBot, text: str) -> str:
    """Send a text and wait for the bot's reply; the reply's plain text."""
    api = running.api
    before = len(api.sent_messages(ALICE.id))
    api.send_text(ALICE, text)
    sent = await api.wait_for_sent(ALICE.id, before + 1)
    return html_to_plain(sent[-1].params["text"])


async def archived(running: RunningBot) -> None:
    """The memory graph archives everything said so far (as the worker does when the
    conversation goes quiet)."""
    await archive_user(running.deps, ALICE.id, archive_all=True)
    assert running.deps.store.messages.unarchived(ALICE.id) == []


def stored_user_texts(running: RunningBot) -> list[str]:
    rows = running.deps.store.messages.all_of(ALICE.id)
    return [row["content"] for row in rows if row["role"] == "user"]


def recalled_message_ids(running: RunningBot) -> set[str]:
    """The external ids of the messages of the topic the last turn recalled first."""
    result = running.turns_of(ALICE)[-1].result
    assert result is not None and result["topics"], "nothing was recalled"
    return set(result["topics"][0]["message_ids"])


async def test_voice_documents_and_a_pdf_are_recalled_later(
    make_deps: Callable[..., Deps],
) -> None:
    async with (
        ScriptedOpenAI() as server,
        running_bot(
            make_deps,
            [ALICE],
            turn_wait_s=0.1,
            transcription_base_url=server.base_url,
            transcription_model="whisper-scripted",
            # Each subject stays a topic of its own: merging is not what this test is about.
            consolidation_similarity_threshold=1.01,
        ) as running,
    ):
        api = running.api
        for line in FILLER:
            await say(running, line)
            await archived(running)

        server.script_transcripts(TRANSCRIPT)
        api.send_voice(ALICE, VOICE, duration=12)
        await api.wait_for_sent(ALICE.id, len(FILLER) + 1)
        await archived(running)
        api.send_document(ALICE, LEASE.encode(), file_name="lease.txt", mime_type="text/plain")
        await api.wait_for_sent(ALICE.id, len(FILLER) + 2)
        await archived(running)
        api.send_document(
            ALICE, small_pdf(PDF_TEXT), file_name="health.pdf", mime_type="application/pdf"
        )
        await api.wait_for_sent(ALICE.id, len(FILLER) + 3)
        await archived(running)

        voice_turn = running.turns_of(ALICE)[len(FILLER)]
        assert voice_turn.text == f"{ENGLISH.voice.format(duration=12)} {TRANSCRIPT}"
        [request] = server.transcription_requests
        assert request.form["model"] == "whisper-scripted"
        assert request.form["file"][1] == VOICE
        voice_label = ENGLISH.voice.format(duration=12)
        assert stored_user_texts(running)[len(FILLER) :] == [
            f"{voice_label} {TRANSCRIPT}",
            ENGLISH.document.format(name="lease.txt"),
            ENGLISH.document.format(name="health.pdf"),
        ]
        voice_id, lease_id, pdf_id = [
            row["external_id"] for row in running.deps.store.messages.all_of(ALICE.id)
            if row["role"] == "user"
        ][len(FILLER) :]  # fmt: skip

        exported = export_user(running.deps, ALICE.id)["attachments"]
        assert [(a["message_id"], a["name"]) for a in exported] == [
            (voice_id, "voice.ogg"),
            (lease_id, "lease.txt"),
            (pdf_id, "health.pdf"),
        ]
        assert exported[0]["content"] == TRANSCRIPT
        assert exported[1]["content"] == LEASE and PDF_TEXT in exported[2]["content"]

        await say(running, "/new")
        answer = await say(running, "When does my passport expire?")
        assert "ninth of March" in answer
        assert voice_id in recalled_message_ids(running)

        answer = await say(running, "Who is my landlord?")
        assert "Okafor" in answer and "lease.txt" in answer
        assert lease_id in recalled_message_ids(running)

        answer = await say(running, "When is my next tetanus booster due?")
        assert "2034" in answer and "health.pdf" in answer
        assert pdf_id in recalled_message_ids(running)
        assert not server.unscripted


async def test_an_edited_message_is_recalled_by_its_new_text_only(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        api, store = running.api, running.deps.store
        for line in FILLER:
            await say(running, line)
        sent = api.send_text(ALICE, "The code of my gym locker is 4417.")
        await api.wait_for_sent(ALICE.id, len(FILLER) + 1)
        await archived(running)
        [locker] = [r for r in store.messages.all_of(ALICE.id) if "locker" in r["content"]]
        [topic] = store.topics.by_ids(ALICE.id, [locker["topic_id"]])
        replies = len(api.sent_messages(ALICE.id))

        api.edit_text(sent, "The code of my gym locker is 9023.")
        await api.wait_until(
            lambda: store.messages.edits(ALICE.id, locker["id"]), what="the edit stored"
        )

        [edit] = store.messages.edits(ALICE.id, locker["id"])
        assert (edit["old_content"], edit["new_content"]) == (
            "The code of my gym locker is 4417.",
            "The code of my gym locker is 9023.",
        )
        assert len(api.sent_messages(ALICE.id)) == replies, "an edit is not answered"
        [exported] = export_user(running.deps, ALICE.id)["message_edits"]
        assert exported["message_id"] == locker["external_id"]
        assert exported["new_content"].endswith("9023.")
        assert [t["id"] for t in store.topics.stale(ALICE.id)] == [topic["id"]]
        await archive_user(running.deps, ALICE.id)
        assert store.topics.stale(ALICE.id) == []
        [again] = store.topics.by_ids(ALICE.id, [topic["id"]])
        assert "4417" not in again["summary"]

        await say(running, "/new")
        answer = await say(running, "What is the code of my gym locker?")
        assert "9023" in answer
        assert "4417" not in answer
        assert locker["external_id"] in recalled_message_ids(running)
        assert store.messages.search(ALICE.id, "4417", 10) == []


async def test_an_edit_that_overtakes_its_message_is_applied_once_it_is_stored(
    make_deps: Callable[..., Deps],
) -> None:
    """A burst: messages and an edit of the last of them arrive in one batch of updates,
    so the edit is handled while its message still waits behind the others to be stored.
    The edit is applied once the message is stored, exactly once."""
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        api, store = running.api, running.deps.store
        for line in FILLER:
            api.send_text(ALICE, line)
        sent = api.send_text(ALICE, "The code of my gym locker is 4417.")
        api.edit_text(sent, "The code of my gym locker is 9023.")

        await api.wait_for_sent(ALICE.id, 1)
        rows = await api.wait_until(
            lambda: [r for r in store.messages.all_of(ALICE.id) if "9023" in r["content"]],
            what="the edit applied",
        )

        [locker] = rows
        [edit] = store.messages.edits(ALICE.id, locker["id"])
        assert (edit["old_content"], edit["new_content"]) == (
            "The code of my gym locker is 4417.",
            "The code of my gym locker is 9023.",
        )
        assert len(store.messages.all_of(ALICE.id)) == len(FILLER) + 1 + 1  # and the answer


async def test_a_documents_passages_are_indexed_after_the_answer(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        api, deps = running.api, running.deps
        api.send_document(ALICE, LEASE.encode(), file_name="lease.txt", mime_type="text/plain")
        await api.wait_for_sent(ALICE.id, 1)
        expected = len(split_passages(LEASE))
        assert [i for i, _ in deps.store.attachments.search(ALICE.id, "Okafor", 5)], (
            "full text finds the document at once"
        )
        await api.wait_until(
            lambda: not deps.store.vector_queue.pending(ALICE.id, "passages"),
            what="the passages' vectors indexed in the background",
        )
        assert deps.vectors.count("passages", ALICE.id) == expected
