"""Speech to text through an OpenAI-compatible transcription endpoint.

`POST {base}/audio/transcriptions` with a multipart `file` and `model`, as OpenAI, Groq
and a self-hosted faster-whisper-server serve it, called with the `openai` client (the
one langchain-openai uses), so its error mapping and timeouts are the real ones.
"""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from core.settings import Settings
from core.text import clip, valid_text
from nodes.shared.structured import LLMOutputError

DETAIL_CHARS = 120


class NoTranscriptionEndpoint(RuntimeError):
    """`TOPICA_TRANSCRIPTION_BASE_URL` is not set."""


class InvalidTranscription(LLMOutputError):
    """A reply that is not the JSON object `{"text": "..."}`; says how, in short."""


class TranscriptionReply(BaseModel, strict=True):
    """The endpoint's reply (`response_format="json"`); other fields are ignored."""

    text: str


def parse_transcription(body: bytes) -> str:
    """The transcript of a reply body, stripped and made valid text; raises
    `InvalidTranscription` for any other shape (not UTF-8, not JSON, no string `text`)."""
    try:
        reply = TranscriptionReply.model_validate_json(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "reply"
        raise InvalidTranscription(clip(f"{where}: {first['msg']}", DETAIL_CHARS)) from None
    return valid_text(reply.text).strip()


async def transcribe(
    settings: Settings,
    data: bytes,
    *,
    name: str,
    mime_type: str,
    base_url: str | None,
    model: str,
    timeout_s: float,
) -> str:
    """The transcript of one audio file (stripped; empty when nothing was heard).

    Raises `NoTranscriptionEndpoint` without an endpoint, `InvalidTranscription` for a
    reply of the wrong shape and the `openai` client's errors (`APIStatusError`,
    `APITimeoutError`, `APIConnectionError`) when the call fails."""
    if not base_url:
        raise NoTranscriptionEndpoint("no transcription endpoint is configured")
    import openai  # the client library loads on the first transcription, not with the graph

    key = settings.transcription_api_key
    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key=key.get_secret_value() if key else "not-needed",
        timeout=timeout_s,
        max_retries=settings.llm_max_retries,
    )
    async with client:
        response = await client.audio.transcriptions.with_raw_response.create(
            model=model, file=(name, data, mime_type), response_format="json"
        )
        return parse_transcription(response.http_response.content)
