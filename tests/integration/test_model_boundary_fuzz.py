"""Fuzz tier for the model boundary: a scripted OpenAI-compatible server on loopback
streams arbitrary text (lone surrogates and NUL included), tool calls with arbitrary
arguments, broken JSON, arbitrary reranker answers and arbitrary transcription bodies.
Every call ends with a reply whose strings any encoder takes, or with a typed fallback;
no exception escapes. Whole turns through the response graph, on each store engine, store
the user's message and the answer exactly once whatever the model sends."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel

from app.turns import answer_turn, compile_response_graph
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.models import ModelRegistry
from core.records import ID_RANGE
from core.settings import Settings
from nodes.response.rerank_selection import TOOL_NAME, parse_answer, requested_topic_ids
from nodes.shared.agent import AgentReply, call_agent, call_agent_json
from nodes.shared.transcription import InvalidTranscription, transcribe
from tests.support.openai_server import (
    RawBody,
    ScriptedOpenAI,
    Step,
    raw_content,
    reply,
    tool_call,
)

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TURNS_FUZZ = settings(FUZZ, max_examples=10)
"""Whole turns cost far more than one call: fewer examples keep the tier within a minute."""
QUESTION = [HumanMessage("What did I say?")]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


class Verdict(BaseModel):
    keep: bool
    reason: str


def encodable(value: Any) -> None:
    json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")


class Boundary:
    """One scripted server and event loop for all of a test's examples."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.server = self.runner.run(ScriptedOpenAI().start())
        self.models = ModelRegistry.fixed(
            {
                "responder": self.server.chat_model(timeout=10),
                "archivist": self.server.chat_model(),
                "reranker": self.server.chat_model(),
            }
        )

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)

    def close(self) -> None:
        self.runner.run(self.server.stop())
        self.runner.close()


def fuzz_with_boundary(test: Any) -> Any:
    def wrapper() -> None:
        boundary = Boundary()
        try:
            test(boundary)
        finally:
            boundary.close()

    wrapper.__name__ = test.__name__
    return wrapper


def checked(result: Any) -> Any:
    assert isinstance(result, AgentReply | AgentFallback), result
    if isinstance(result, AgentFallback):
        assert result.reason in ("empty_reply", "invalid_output"), result
        return None
    value = result.value
    encodable(value.model_dump() if isinstance(value, BaseModel) else value)
    encodable(result.message.content)
    encodable(result.message.tool_calls)
    return result.value


@fuzz_with_boundary
def test_streamed_and_whole_text(boundary: Boundary) -> None:
    @FUZZ
    @given(text=st.text(max_size=60), streamed=st.booleans())
    def case(text: str, streamed: bool) -> None:
        boundary.server.clear_script()
        boundary.server.script(reply(text))
        stop = asyncio.Event() if streamed else None
        value = checked(
            boundary.run(call_agent(boundary.models, "responder", QUESTION, user_id=1, stop=stop))
        )
        if value is not None:
            assert "\x00" not in value and len(value) <= len(text)

    case()


@fuzz_with_boundary
def test_tool_call_arguments(boundary: Boundary) -> None:
    @FUZZ
    @given(args=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4))
    def case(args: dict[str, Any]) -> None:
        boundary.server.clear_script()
        boundary.server.script(tool_call("search_history", args))
        result = boundary.run(
            call_agent(
                boundary.models, "responder", QUESTION, user_id=1, parse=lambda message: "",
                stop=asyncio.Event(),
            )
        )  # fmt: skip
        checked(result)

    case()


@fuzz_with_boundary
def test_broken_json_for_a_schema(boundary: Boundary) -> None:
    @FUZZ
    @given(text=st.text(max_size=80) | JSON_VALUES.map(json.dumps))
    def case(text: str) -> None:
        boundary.server.clear_script()
        boundary.server.script(raw_content(text))
        result = boundary.run(
            call_agent_json(boundary.models, "archivist", QUESTION, Verdict, user_id=1)
        )
        value = checked(result)
        assert value is None or isinstance(value, Verdict)

    case()


RERANKER_ANSWERS = (
    st.text(max_size=80)
    | JSON_VALUES.map(json.dumps)
    | st.fixed_dictionaries(
        {"topics": st.lists(JSON_VALUES | st.integers(), max_size=3)},
        optional={"people": st.lists(JSON_VALUES, max_size=2)},
    ).map(json.dumps)
)


@fuzz_with_boundary
def test_reranker_answers_and_requests(boundary: Boundary) -> None:
    @FUZZ
    @given(
        answer=RERANKER_ANSWERS,
        args=st.dictionaries(st.just("ids") | st.text(max_size=4), JSON_VALUES, max_size=2),
    )
    def case(answer: str, args: dict[str, Any]) -> None:
        boundary.server.clear_script()
        boundary.server.script(tool_call(TOOL_NAME, args), raw_content(answer))
        request = boundary.run(
            call_agent(boundary.models, "reranker", QUESTION, user_id=1, parse=requested_topic_ids)
        )
        ids = checked(request)
        assert ids is None or all(isinstance(i, int) and i in ID_RANGE for i in ids)
        final = checked(
            boundary.run(
                call_agent(
                    boundary.models,
                    "reranker",
                    QUESTION,
                    user_id=1,
                    parse=lambda message: parse_answer(message.text),
                )
            )
        )
        if final is not None:
            encodable(final)
            assert all(topic["id"] in ID_RANGE for topic in final["topics"])

    case()


@fuzz_with_boundary
def test_transcription_bodies(boundary: Boundary) -> None:
    @FUZZ
    @given(body=st.binary(max_size=80) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
    def case(body: bytes) -> None:
        boundary.server.clear_script()
        boundary.server.script_transcripts(RawBody(body))
        try:
            text = boundary.run(
                transcribe(
                    Settings(_env_file=None, llm_max_retries=0), b"RIFF", name="v.ogg",
                    mime_type="audio/ogg", base_url=boundary.server.base_url, model="whisper",
                    timeout_s=5,
                )
            )  # fmt: skip
        except InvalidTranscription:
            return
        encodable(text)
        assert "\x00" not in text

    case()


USER_TEXTS = st.text(min_size=1, max_size=40).filter(str.strip)
TURN_STEPS = st.lists(
    st.text(max_size=60).map(reply)
    | st.text(max_size=60).map(raw_content)
    | st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3).map(
        lambda args: tool_call("search_history", args)
    ),
    min_size=1,
    max_size=3,
)


def assert_stored_once(deps: Deps, user_id: int, result: dict[str, Any]) -> None:
    """The user's message stored once, and the answer once (none for an empty answer)."""
    rows = deps.store.messages.all_of(user_id)
    questions = [row for row in rows if row["role"] == "user"]
    answers = [row for row in rows if row["role"] == "assistant"]
    assert len(questions) == 1, rows
    if result["answer"]:
        assert [row["content"] for row in answers] == [result["answer"]], rows
        encodable(result["answer"])
    else:
        assert answers == [], rows


class Turns:
    """A response graph on the boundary's server, over the test's store engine."""

    def __init__(self, boundary: Boundary, make_deps: Callable[..., Deps]) -> None:
        self.boundary = boundary
        self.deps = make_deps(models={"responder": boundary.server.chat_model(timeout=10)})
        self.graph: CompiledStateGraph = compile_response_graph(self.deps)
        self.users = itertools.count(1)

    def turn(self, text: str, steps: list[Step], streamed: bool) -> None:
        self.boundary.server.clear_script()
        self.boundary.server.script(*steps)
        user_id = next(self.users)
        on_text = (lambda _: None) if streamed else None
        result = self.boundary.run(
            answer_turn(self.graph, self.deps, user_id, text, on_text=on_text)
        )
        assert_stored_once(self.deps, user_id, result)


def test_fuzzed_turns_store_each_message_once(make_deps: Callable[..., Deps]) -> None:
    boundary = Boundary()
    try:
        turns = Turns(boundary, make_deps)

        @TURNS_FUZZ
        @given(text=USER_TEXTS, steps=TURN_STEPS, streamed=st.booleans())
        def case(text: str, steps: list[Step], streamed: bool) -> None:
            turns.turn(text, steps, streamed)

        case()
    finally:
        boundary.close()
