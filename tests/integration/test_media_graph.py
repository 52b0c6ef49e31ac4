"""The media graph against a scripted OpenAI-compatible server on loopback: voice
transcribed by the transcription endpoint (the real `openai` client, multipart), by the
multimodal describer when the endpoint is missing or fails, photos described, and labels
kept when nothing can read the media. Real SQLite, Chroma and encoder: the text saved is
what search finds."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from app.media import MediaDigester, media_item
from core.deps import Deps
from core.records import NewMessage
from tests.support.openai_server import RawBody, ScriptedOpenAI, delay, http_error, reply

VOICE = b"OggS" + bytes(range(256)) * 4
PHOTO = b"\xff\xd8\xff" + b"\x10" * 600
LABEL = "[voice message, 12 s]"
TRANSCRIPT = "My passport expires on the ninth of March, renew it in February"


def stored_item(deps: Deps, label: str, kind: str = "audio", data: bytes = VOICE) -> Any:
    message = NewMessage(
        external_id=f"m-{label}", role="user", content=label, created_at="2026-05-02T10:00:00"
    )
    [row] = deps.indexer.store_messages(1, [message])
    name, mime = ("voice.ogg", "audio/ogg") if kind == "audio" else ("photo.jpg", "image/jpeg")
    return media_item(row["id"], kind, name, mime, data, label)


def described_photo(deps: Deps, server: ScriptedOpenAI, caption: str, description: str) -> Any:
    """A stored photo captioned `caption`, which the scripted describer describes as
    `description`."""
    server.script(reply(description))
    return stored_item(deps, f"[photo] {caption}", kind="image", data=PHOTO)


def content_of(deps: Deps, message_id: int) -> str:
    return deps.store.messages.by_ids(1, [message_id])[0]["content"]


@pytest.fixture
def with_endpoint(make_deps: Callable[..., Deps], server: ScriptedOpenAI):
    def build(**overrides: Any) -> Deps:
        return make_deps(
            transcription_base_url=server.base_url,
            transcription_model="whisper-scripted",
            transcription_timeout_s=1.0,
            llm_max_retries=0,
            **overrides,
        )

    return build


async def test_the_endpoint_transcribes_and_the_transcript_is_searchable(
    with_endpoint, server: ScriptedOpenAI
) -> None:
    deps = with_endpoint()
    server.script_transcripts(f"  {TRANSCRIPT}\n")
    item = stored_item(deps, LABEL)

    state = await MediaDigester(deps).digest(1, [item])

    assert state["transcribe_fallback"] is None
    assert state["saved"] == [item["message_id"]]
    assert content_of(deps, item["message_id"]) == f"{LABEL} {TRANSCRIPT}"
    [request] = server.transcription_requests
    assert request.form["model"] == "whisper-scripted"
    assert request.form["file"] == ("voice.ogg", VOICE)
    assert [i for i, _ in deps.store.messages.search(1, "passport expires", 5)] == [
        item["message_id"]
    ]
    vector = deps.embedder.encode_query("When does my passport expire?")
    [(nearest, _)] = deps.vectors.query("messages", 1, vector, 1)
    assert nearest == item["message_id"]
    assert deps.store.messages.edits(1, item["message_id"]) == [], "a transcript is no edit"


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (http_error(500), "api_error"),
        (delay(3.0, then=TRANSCRIPT), "timeout"),
        ("  ", "empty_reply"),
        (RawBody(b'"just a string"'), "invalid_output"),
        (RawBody(b'{"text": {"nested": "dict"}}'), "invalid_output"),
        (RawBody(b'{"text": "caf\xe9 au lait"}'), "invalid_output"),
        (RawBody(b"<html>502 Bad Gateway</html>", "text/html"), "invalid_output"),
        (RawBody(b'{"transcript": "wrong key"}'), "invalid_output"),
    ],
    ids=["http-500", "timeout", "empty", "string", "dict-text", "not-utf8", "html", "no-text"],
)
async def test_a_failing_endpoint_takes_the_edge_to_the_describer(
    with_endpoint, server: ScriptedOpenAI, failure: Any, reason: str
) -> None:
    deps = with_endpoint(models={"describer": server.chat_model()})
    server.script_transcripts(failure)
    server.script(reply(TRANSCRIPT))
    item = stored_item(deps, LABEL)

    state = await MediaDigester(deps).digest(1, [item])

    assert state["transcribe_fallback"] == reason
    assert content_of(deps, item["message_id"]) == f"{LABEL} {TRANSCRIPT}"
    [chat] = server.chat_requests
    sent = chat.json_body["messages"][-1]["content"]
    assert any(VOICE_B64 in str(block) for block in sent), "the audio went to the describer"


VOICE_B64 = base64.b64encode(VOICE).decode()


async def test_without_endpoint_or_describer_the_label_stays(deps: Deps) -> None:
    item = stored_item(deps, LABEL)
    photo = stored_item(deps, "[photo] my desk", kind="image", data=PHOTO)

    state = await MediaDigester(deps).digest(1, [item, photo])

    assert state["transcribe_fallback"] == "no_endpoint"
    assert state["describe_fallback"] == "no_model"
    assert state["saved"] == []
    assert content_of(deps, item["message_id"]) == LABEL
    assert content_of(deps, photo["message_id"]) == "[photo] my desk"


async def test_a_failing_describer_keeps_the_label(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"describer": server.chat_model()})
    server.script(http_error(500))
    item = stored_item(deps, LABEL)

    state = await MediaDigester(deps).digest(1, [item])

    assert (state["transcribe_fallback"], state["describe_fallback"]) == (
        "no_endpoint",
        "api_error",
    )
    assert content_of(deps, item["message_id"]) == LABEL


async def test_a_photo_is_described_by_the_describer(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"describer": server.chat_model()})
    photo = described_photo(
        deps,
        server,
        "where I live",
        "A red bicycle leaning on a blue door, a sign reads 'Rua Augusta 12'.",
    )

    state = await MediaDigester(deps).digest(1, [photo])

    assert state["describe_fallback"] is None
    assert content_of(deps, photo["message_id"]) == (
        "[photo] where I live A red bicycle leaning on a blue door, a sign reads 'Rua Augusta 12'."
    )
    system, user = server.chat_requests[0].json_body["messages"]
    assert "describe a photo" in system["content"]
    assert "<caption>where I live</caption>" in str(user["content"])
    assert [i for i, _ in deps.store.messages.search(1, "bicycle", 5)] == [photo["message_id"]]


async def test_an_edited_caption_keeps_what_the_photo_showed(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    from app.media import edit_message

    deps = make_deps(models={"describer": server.chat_model()})
    photo = described_photo(deps, server, "my bike", "A red bicycle by a blue door.")
    await MediaDigester(deps).digest(1, [photo])
    [attachment] = deps.store.attachments.of_messages(1, [photo["message_id"]])
    assert attachment["content"] == "A red bicycle by a blue door."

    edit_message(deps, 1, "m-[photo] my bike", "[photo] my old bike")

    assert content_of(deps, photo["message_id"]) == (
        "[photo] my old bike A red bicycle by a blue door."
    )
    assert deps.store.attachments.passages_of_messages(1, [photo["message_id"]]) == []


async def test_a_huge_transcript_is_kept_up_to_a_documents_length(
    with_endpoint, server: ScriptedOpenAI
) -> None:
    deps = with_endpoint(max_document_chars=1000)
    server.script_transcripts("word " * 200_000)
    item = stored_item(deps, LABEL)

    await MediaDigester(deps).digest(1, [item])

    content = content_of(deps, item["message_id"])
    assert content.startswith(f"{LABEL} word word")
    assert len(content) <= len(LABEL) + 1 + 1000
    [attachment] = deps.store.attachments.of_messages(1, [item["message_id"]])
    assert len(attachment["content"]) <= 1000
