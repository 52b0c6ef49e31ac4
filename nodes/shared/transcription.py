"""Speech to text through an OpenAI-compatible transcription endpoint.

`POST {base}/audio/transcriptions` with a multipart `file` and `model`, as OpenAI, Groq
and a self-hosted faster-whisper-server serve it, called with the `openai` client (the
one langchain-openai uses), so its error mapping and timeouts are the real ones.
"""

from __future__ import annotations

import openai

from core.settings import Settings


class NoTranscriptionEndpoint(RuntimeError):
    """`TOPICA_TRANSCRIPTION_BASE_URL` is not set."""


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

    Raises `NoTranscriptionEndpoint` without an endpoint and the `openai` client's errors
    (`APIStatusError`, `APITimeoutError`, `APIConnectionError`) when the call fails."""
    if not base_url:
        raise NoTranscriptionEndpoint("no transcription endpoint is configured")
    key = settings.transcription_api_key
    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key=key.get_secret_value() if key else "not-needed",
        timeout=timeout_s,
        max_retries=settings.llm_max_retries,
    )
    async with client:
        result = await client.audio.transcriptions.create(
            model=model, file=(name, data, mime_type), response_format="json"
        )
    return (result.text or "").strip()
