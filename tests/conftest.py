"""Fixtures for every tier, and the tier markers.

Real SQLite and a real (persistent, per-test temporary) Chroma, the real local
multilingual embedder, and scripted fake chat models that record their prompts.
The environment's `TOPICA_*` variables and `.env` are kept out, so a developer's
configuration can never point a test at a live model or a Chroma server.

Each test is marked with its tier, the folder it lies in (`unit`, `integration`,
`e2e`), so `pytest -m unit` runs the same tests as `pytest tests/unit`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langgraph.runtime import Runtime

from core.context import MemoryContext
from core.deps import Deps
from core.ports import Embedder
from core.records import NewMessage
from core.settings import Settings
from stores.embedders import build_embedder
from tests.support.messages import new_messages
from tests.support.models import ScriptedChatModel, scripted_model
from tests.support.openai_server import ScriptedOpenAI
from tests.support.services import closing_each, isolated_settings, local_deps, memory_runtime

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the tier folder it lies in (before `-m` selects)."""
    for item in items:
        parts = item.path.relative_to(TESTS).parts
        if parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope="session", autouse=True)
def _no_topica_environment() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("TOPICA_"):
                patch.delenv(name)
        yield


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

    def build(
        models: dict[str, Any] | None = None, data_dir: Path | None = None, **overrides: Any
    ) -> Deps:
        return local_deps(data_dir or tmp_path / "data", embedder, models, **overrides)

    with closing_each(build) as make:
        yield make


@pytest.fixture
def deps(make_deps: Callable[..., Deps]) -> Deps:
    """Real SQLite + Chroma in a temporary data dir, no chat models (the non-LLM path)."""
    return make_deps()


@pytest.fixture
def make_messages() -> Callable[..., list[NewMessage]]:
    """`make_messages(contents, ...)`: `tests.support.messages.new_messages`."""
    return new_messages


@pytest.fixture
def fake_model() -> Callable[..., ScriptedChatModel]:
    """`fake_model(reply, ..., then=None, error=None)`: a `ScriptedChatModel`.

    Replies (text, or a dict/list sent as JSON) come in order; then `then` forever
    if given, or `error` is raised (a provider failure) if given.
    """
    return scripted_model


@pytest.fixture
def runtime_for() -> Callable[..., Runtime[MemoryContext]]:
    """`runtime_for(user_id, **context)`: the runtime a memory-graph node receives."""
    return memory_runtime


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ScriptedOpenAI]:
    """The scripted OpenAI-compatible server on loopback, for the test's duration."""
    async with ScriptedOpenAI() as scripted:
        yield scripted
