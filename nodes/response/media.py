"""The media graph's nodes: voice and audio transcribed, photos described, and the text
saved as the message's own, so search, the enricher and the reranker see what was said
or shown (issue 14). Each step has its fallback edge:

- `transcribe`: the transcription endpoint; without one, or when it fails, the audio
  goes to `transcribe_by_model`, the multimodal describer model;
- `transcribe_by_model` and `describe` (photos): the describer; without it, or when it
  fails, the message keeps its label (`[voice message, 12 s]`, `[photo] caption`).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import MediaContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.fallbacks import AgentFallback, TranscribeFallback
from core.state import MediaItem, MediaState, Repair
from core.text import neutralize
from core.tracing import user_key
from nodes.shared.agent import call_agent, describe, is_timeout, repairs_of
from nodes.shared.transcription import InvalidTranscription, NoTranscriptionEndpoint, transcribe
from prompts import describer as prompt

log = logging.getLogger(__name__)


def of_kind(state: MediaState, kind: str) -> list[MediaItem]:
    return [item for item in state["items"] if item["kind"] == kind]


def caption_of(item: MediaItem) -> str:
    """The caption part of the stored label (`[photo] caption` → `caption`)."""
    label = item["label"]
    return label.split("]", 1)[1].strip() if label.startswith("[") and "]" in label else ""


def media_request(system: str, item: MediaItem) -> list[SystemMessage | HumanMessage]:
    block = {"type": item["kind"], "base64": item["base64"], "mime_type": item["mime_type"]}
    text = prompt.USER.format(caption=neutralize(caption_of(item)) or "-")
    return [SystemMessage(system), HumanMessage([{"type": "text", "text": text}, block])]


def make_transcribe(deps: Deps):
    async def transcribe_audio(
        state: MediaState, runtime: Runtime[MediaContext]
    ) -> Command[Literal["describe", "transcribe_by_model"]]:
        context = runtime.context
        audio = of_kind(state, "audio")
        texts: dict[int, str] = {}
        failed: list[int] = []
        reason: TranscribeFallback | None = None
        for item in audio:
            try:
                text = await transcribe(
                    deps.settings,
                    base64.b64decode(item["base64"]),
                    name=item["name"],
                    mime_type=item["mime_type"],
                    base_url=context.transcription_base_url,
                    model=context.transcription_model,
                    timeout_s=context.transcription_timeout_s,
                )
            except NoTranscriptionEndpoint:
                text, reason = "", "no_endpoint"
            except InvalidTranscription as error:
                text, reason = "", "invalid_output"
                log.warning(
                    "user %s: transcription fell back: invalid_output: %s",
                    user_key(context.user_id), error,
                )  # fmt: skip
            except Exception as error:  # any endpoint failure takes the fallback edge
                text = ""
                reason = "timeout" if is_timeout(error) else "api_error"
                log.warning(
                    "user %s: transcription fell back: %s", user_key(context.user_id),
                    describe(error),
                )  # fmt: skip
            else:
                reason = reason or (None if text else "empty_reply")
            if text:
                texts[item["message_id"]] = text
            else:
                failed.append(item["message_id"])
        if failed:
            return Command(
                goto="transcribe_by_model",
                update={"texts": texts, "untranscribed": failed, "transcribe_fallback": reason},
            )
        return Command(goto="describe", update={"texts": texts, "transcribe_fallback": None})

    return transcribe_audio


async def ask_describer(
    deps: Deps, user_id: int, system: str, items: list[MediaItem]
) -> tuple[dict[int, str], AgentFallback | None, list[Repair]]:
    """The describer's text for each item it answered, its first fallback, if any, and
    what was set right in its replies."""
    texts: dict[int, str] = {}
    fallback: AgentFallback | None = None
    repairs: list[Repair] = []
    for item in items:
        result = await call_agent(
            deps.models, "describer", media_request(system, item), user_id=user_id
        )
        if isinstance(result, AgentFallback):
            fallback = fallback or result
            if result.reason == "no_model":
                break
            continue
        texts[item["message_id"]] = " ".join(result.value.split())
        repairs.extend(repairs_of("describer", result))
    return texts, fallback, repairs


def describer_step(
    deps: Deps,
    kind: Literal["audio", "image"],
    system: str,
    *,
    done: str,
    fallback: str,
    waiting: str | None = None,
):
    """A node that has the describer turn the group's media of `kind` into text (only the
    items listed in the state's `waiting` key, if given): on to `done`, or with what it
    got so far to `fallback` when the model is missing or fails. An earlier step's
    describer fallback stays on record."""

    async def step(state: MediaState, runtime: Runtime[MediaContext]) -> Command:
        items = of_kind(state, kind)
        if waiting is not None:
            wanted = set(state.get(waiting) or [])
            items = [item for item in items if item["message_id"] in wanted]
        texts, failure, repairs = await ask_describer(deps, runtime.context.user_id, system, items)
        update = {"texts": texts, "repairs": repairs}
        if failure is not None:
            return Command(goto=fallback, update={**update, "describe_fallback": failure.reason})
        earlier = state.get("describe_fallback")
        return Command(goto=done, update={**update, "describe_fallback": earlier})

    return step


def make_transcribe_by_model(deps: Deps):
    """What the transcription endpoint could not transcribe, by the describer."""
    return describer_step(
        deps,
        "audio",
        prompt.TRANSCRIBE,
        done="describe",
        fallback="keep_voice_label",
        waiting="untranscribed",
    )


async def keep_voice_label(state: MediaState) -> dict:
    """The non-LLM path of voice: a message nobody transcribed keeps its label."""
    return {}


def make_describe(deps: Deps):
    """The group's photos, described."""
    return describer_step(deps, "image", prompt.DESCRIBE, done="save", fallback="keep_photo_label")


async def keep_photo_label(state: MediaState) -> dict:
    """The non-LLM path of photos: a photo nobody described keeps `[photo] caption`."""
    return {}


def searchable_text(label: str, text: str) -> str:
    """What the message stores: its label kept, then what the media said or showed."""
    return f"{label} {text}".strip()


def make_save(deps: Deps):
    def save_texts(user_id: int, items: list[MediaItem], texts: dict[int, str]) -> list[int]:
        saved = []
        for item in items:
            # A transcript or description is kept up to a document's length.
            text = (texts.get(item["message_id"]) or "")[: deps.settings.max_document_chars]
            if not text:
                continue
            with deps.store.atomic():
                row = deps.store.messages.rewrite(
                    user_id, item["message_id"], searchable_text(item["label"], text), edit=False
                )
                if row is not None:
                    # Kept with the message too, so an edit of its caption keeps it.
                    deps.store.attachments.add(
                        user_id, item["message_id"], item["name"], item["mime_type"], text, []
                    )
                    saved.append(item["message_id"])
        try:
            deps.indexer.index(user_id, "messages")
        except VectorStoreUnavailable as error:  # the queue keeps them for the next run
            log.warning("user %s: media text indexing postponed: %s", user_key(user_id), error)
        return saved

    async def save(state: MediaState, runtime: Runtime[MediaContext]) -> dict:
        saved = await asyncio.to_thread(
            save_texts, runtime.context.user_id, state["items"], state.get("texts") or {}
        )
        return {"saved": saved}

    return save
