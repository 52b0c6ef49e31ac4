"""Finalize: sanitise the answer (seed 002) and store it as the assistant's message, with
its sources (seed 003's `context_used`) in the same transaction.

Models sometimes leak control tokens (`</tool_code>`, `</s>`) or loop, printing JSON
block after JSON block. Those artefacts are cut and named in `sanitized`; a run of three
or more consecutive JSON code blocks is runaway output and is removed whole.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from uuid import uuid4

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.metrics import ANOMALIES
from core.records import REPLY_PREFIX, AnsweredBy, MessageKind, NewMessage
from core.state import NO_CONTEXT, ResponseState
from nodes.shared.clock import turn_moment

ARTEFACTS = ("</tool_code>", "<tool_code>", "</s>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>")
RUNAWAY_JSON_BLOCKS = 3
ASSISTANT_NAME = "Topica"
RUN = "run"
"""The run's claim on storing its answer (`ResponseContext.answer_claim`)."""

_CODE_BLOCK = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)```", re.DOTALL)


def _is_json_block(match: re.Match[str]) -> bool:
    if match["lang"].lower() == "json":
        return True
    body = match["body"].strip()
    if not body.startswith(("{", "[")):
        return False
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def strip_runaway_json(text: str) -> tuple[str, int]:
    """`text` without runs of 3+ JSON code blocks separated only by whitespace.

    Returns the text and how many blocks were removed.
    """
    runs: list[list[re.Match[str]]] = []
    for match in _CODE_BLOCK.finditer(text):
        if not _is_json_block(match):
            runs.append([])
            continue
        if runs and runs[-1] and not text[runs[-1][-1].end() : match.start()].strip():
            runs[-1].append(match)
        else:
            runs.append([match])
    removed = 0
    for run in reversed([run for run in runs if len(run) >= RUNAWAY_JSON_BLOCKS]):
        text = text[: run[0].start()] + text[run[-1].end() :]
        removed += len(run)
    return text, removed


def sanitize(text: str) -> tuple[str, list[str]]:
    """The answer without artefacts, and the names of the anomalies found."""
    anomalies: list[str] = []
    for artefact in ARTEFACTS:
        if artefact in text:
            text = text.replace(artefact, "")
            anomalies.append(f"artefact {artefact}")
    text, removed = strip_runaway_json(text)
    if removed:
        anomalies.append(f"runaway JSON ({removed} blocks)")
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, anomalies


def reply_external_id(message_id: int | None) -> str:
    """The stored answer's id: tied to the question's row, so a resumed run stores it once."""
    return f"{REPLY_PREFIX}{message_id}" if message_id is not None else f"reply-{uuid4().hex}"


def count_anomalies(state: ResponseState, sanitized: list[str]) -> None:
    """Seed 002's anomalies: empty replies, whether the retry rescued them, artefacts cut."""
    empty = state.get("empty_replies", 0)
    if empty:
        ANOMALIES.labels(type="empty_response").inc(empty)
        failed = state.get("respond_fallback") == "empty_reply"
        ANOMALIES.labels(type="retry_failed" if failed else "retry_success").inc()
    if sanitized:
        ANOMALIES.labels(type="sanitized").inc()


FALLBACKS = {
    "search": "search_fallback",
    "enricher": "enrich_fallback",
    "summariser": "summary_fallback",
    "reranker": "rerank_fallback",
    "responder": "respond_fallback",
}
"""Each agent, and the state key of the fallback reason it may have left."""


def answer_sources(state: ResponseState) -> dict[str, Any]:
    """Seed 003's `context_used`: what the context held of memory, the tools the responder
    called (and with what), and the agents that fell back, with their reasons."""
    tools = [
        {"name": call["name"], "args": call["args"]}
        for message in state.get("messages") or []
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    ]
    fallbacks = {agent: state.get(key) for agent, key in FALLBACKS.items() if state.get(key)}
    return {**(state.get("context_used") or NO_CONTEXT), "tools": tools, "fallbacks": fallbacks}


def store_answer(
    deps: Deps,
    user_id: int,
    reply: NewMessage,
    sources: dict[str, Any],
    *,
    answered_by: AnsweredBy,
    partial: bool,
) -> int:
    """The answer and its sources in one transaction; its row id. The answer's vector
    waits in the queue like the question's (`Indexer.store_live`).
    An answer already stored (a resumed run) gets its sources recorded again."""
    store = deps.store
    with store.atomic():
        rows = store.messages.add(user_id, [reply])
        message = rows[0] if rows else store.messages.by_external_id(user_id, reply["external_id"])
        assert message is not None, "the answer was stored by this run or an earlier one"
        store.answers.record(
            user_id, message["id"], sources, answered_by=answered_by, partial=partial
        )
    return message["id"]


def answer_kind(answered_by: AnsweredBy) -> MessageKind:
    """A model's answer is conversation; the memory-only answer only quotes memory, so it
    stays in the log (the window shows it) but never becomes memory itself."""
    return "memory_only_answer" if answered_by == "memory" else "conversation"


def noted(note: str, answer: str) -> str:
    """The answer after its note (`ResponseContext.answer_note`), if any."""
    return f"{note}\n\n{answer}" if note else answer


def make_finalize(deps: Deps):
    async def finalize(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        context = runtime.context
        answer, anomalies = sanitize(state.get("answer", ""))
        count_anomalies(state, anomalies)
        if not answer:  # stopped by the user before the first word: nothing to keep
            return {"answer": "", "sanitized": anomalies, "answer_message_id": None}
        answer = noted(context.answer_note, answer)
        answered_by = state.get("answered_by", "memory")
        reply = NewMessage(
            external_id=reply_external_id(state.get("message_id")),
            role="assistant",
            content=answer,
            created_at=turn_moment(context).isoformat(timespec="seconds"),
            author=ASSISTANT_NAME,
            kind=answer_kind(answered_by),
        )
        if not context.answer_claim.claim(RUN, answer):  # the deadline cut the run first
            return {"answer": "", "sanitized": anomalies, "answer_message_id": None}
        message_id = await asyncio.to_thread(
            store_answer,
            deps,
            context.user_id,
            reply,
            answer_sources(state),
            answered_by=answered_by,
            partial=bool(state.get("answer_partial")),
        )
        return {"answer": answer, "sanitized": anomalies, "answer_message_id": message_id}

    return finalize
