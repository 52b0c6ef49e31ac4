"""Shared fixtures for the memory-side tests.

Real SQLite and a real (persistent, per-test temporary) Chroma, the real local
multilingual embedder, and scripted fake chat models that record their prompts.
The environment's `TOPICA_*` variables and `.env` are kept out, so a developer's
configuration can never point a test at a live model or a Chroma server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.runtime import Runtime
from pydantic import Field

from app.memory import archive_user
from core.context import MemoryContext
from core.deps import Deps
from core.models import ModelRegistry
from core.records import NewMessage, Role
from core.settings import Settings
from core.state import MemoryState
from stores.embedders import Embedder, build_embedder
from stores.saved_sessions import read_session
from stores.services import build_deps

EXAMPLES = Path(__file__).resolve().parents[1] / "graphs" / "examples"
DEMO_SESSION = EXAMPLES / "demo_session.jsonl"
DEMO_SUBJECTS = EXAMPLES / "demo_subjects.json"
BASE_TIME = datetime.fromisoformat("2026-03-02T09:00:00+00:00")


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model that replays scripted replies and records every request.

    `prompts` holds the messages of each call and `call_kwargs` what was bound
    (e.g. `response_format`), so tests can check what a node showed the model.
    """

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(list(messages))
        self.call_kwargs.append(dict(kwargs))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@pytest.fixture(scope="session", autouse=True)
def _no_topica_environment() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("TOPICA_"):
                patch.delenv(name)
        yield


def isolated_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings from defaults and `overrides` only (no `.env`, no environment)."""
    return Settings(_env_file=None, data_dir=data_dir, **overrides)


@pytest.fixture
def make_settings() -> Callable[..., Settings]:
    """`make_settings(data_dir, **overrides)`: settings isolated from the environment."""
    return isolated_settings


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real local multilingual USE, loaded once for the whole session."""
    return build_embedder(isolated_settings(Path("unused")))


@pytest.fixture
def make_deps(tmp_path: Path, embedder: Embedder) -> Iterator[Callable[..., Deps]]:
    """`make_deps(models={...}, data_dir=..., **settings)`: services over a temporary data dir."""
    opened: list[Deps] = []

    def make(
        models: dict[str, Any] | None = None, data_dir: Path | None = None, **overrides: Any
    ) -> Deps:
        settings = isolated_settings(data_dir or tmp_path / "data", **overrides)
        deps = build_deps(settings, models=ModelRegistry.fixed(models or {}), embedder=embedder)
        opened.append(deps)
        return deps

    yield make
    for deps in opened:
        deps.close()


@pytest.fixture
def deps(make_deps: Callable[..., Deps]) -> Deps:
    """Real SQLite + Chroma in a temporary data dir, no chat models (the non-LLM path)."""
    return make_deps()


def new_messages(
    contents: Sequence[str | tuple[Role, str]],
    *,
    start: datetime = BASE_TIME,
    step: timedelta = timedelta(minutes=1),
    prefix: str = "m",
    gaps: dict[int, timedelta] | None = None,
) -> list[NewMessage]:
    """NewMessage rows `m1, m2, …` one `step` apart; roles alternate user/assistant.

    An item may be `(role, content)` to set its role; `gaps[i]` adds extra time
    before the i-th message (0-based).
    """
    messages: list[NewMessage] = []
    moment = start
    for index, item in enumerate(contents):
        if index:
            moment += step
        moment += (gaps or {}).get(index, timedelta(0))
        role, content = (
            item if isinstance(item, tuple) else (("user", "assistant")[index % 2], item)
        )
        messages.append(
            NewMessage(
                external_id=f"{prefix}{index + 1}",
                role=role,
                content=content,
                created_at=moment.isoformat(),
                author="Alexei" if role == "user" else "Topica",
            )
        )
    return messages


@pytest.fixture
def make_messages() -> Callable[..., list[NewMessage]]:
    return new_messages


def _replies_then_error(replies: list[AIMessage], error: Exception) -> Iterator[AIMessage]:
    yield from replies
    raise error


@pytest.fixture
def fake_model() -> Callable[..., ScriptedChatModel]:
    """`fake_model(reply, ..., then=None, error=None)`: a `ScriptedChatModel`.

    Replies (text, or a dict/list sent as JSON) come in order; then `then` forever
    if given, or `error` is raised (a provider failure) if given.
    """

    def make(
        *replies: str | dict | list,
        then: str | dict | list | None = None,
        error: Exception | None = None,
    ) -> ScriptedChatModel:
        def as_message(reply: str | dict | list) -> AIMessage:
            text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
            return AIMessage(content=text)

        scripted = [as_message(reply) for reply in replies]
        if error is not None:
            return ScriptedChatModel(messages=_replies_then_error(scripted, error))
        tail = repeat(as_message(then)) if then is not None else iter(())
        return ScriptedChatModel(messages=chain(scripted, tail))

    return make


def memory_runtime(user_id: int = 1, **overrides: Any) -> Runtime[MemoryContext]:
    """The runtime a memory-graph node receives, for calling a node alone."""
    return Runtime(context=MemoryContext(user_id=user_id, **overrides))


@pytest.fixture
def runtime_for() -> Callable[..., Runtime[MemoryContext]]:
    return memory_runtime


def demo_subject_of() -> dict[str, int]:
    """External id of each demo message → index of its true subject block."""
    blocks = json.loads(DEMO_SUBJECTS.read_text(encoding="utf-8"))
    order = [message["external_id"] for message in read_session(DEMO_SESSION)]
    position = {external_id: index for index, external_id in enumerate(order)}
    subject: dict[str, int] = {}
    for block_index, block in enumerate(blocks):
        for index in range(position[block["first"]], position[block["last"]] + 1):
            subject[order[index]] = block_index
    return subject


@dataclass
class DemoArchive:
    """The example session ingested (non-LLM path) for two users, each twice."""

    deps: Deps
    users: tuple[int, ...]
    external_ids: list[str]
    stored_first: dict[int, int]
    stored_second: dict[int, int]
    chunks_first: dict[int, list[MemoryState]]
    chunks_second: dict[int, list[MemoryState]]
    topic_ids_first: dict[int, list[int]]
    subject_of: dict[str, int]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def demo_archive(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder):
    settings = isolated_settings(tmp_path_factory.mktemp("demo") / "data")
    deps = build_deps(settings, models=ModelRegistry.fixed({}), embedder=embedder)
    messages = read_session(DEMO_SESSION)
    users = (1, 2)
    stored_first, stored_second, chunks_first, chunks_second, topic_ids_first = {}, {}, {}, {}, {}
    for user_id in users:
        stored_first[user_id] = len(deps.indexer.store_messages(user_id, messages))
        chunks_first[user_id] = await archive_user(deps, user_id, archive_all=True)
        topic_ids_first[user_id] = [topic["id"] for topic in deps.store.topics.all_of(user_id)]
    for user_id in users:
        stored_second[user_id] = len(deps.indexer.store_messages(user_id, messages))
        chunks_second[user_id] = await archive_user(deps, user_id, archive_all=True)
    yield DemoArchive(
        deps=deps,
        users=users,
        external_ids=[message["external_id"] for message in messages],
        stored_first=stored_first,
        stored_second=stored_second,
        chunks_first=chunks_first,
        chunks_second=chunks_second,
        topic_ids_first=topic_ids_first,
        subject_of=demo_subject_of(),
    )
    deps.close()
