"""The unit tier: in process, no server (not even on loopback), no subprocess, no Chroma
and no sentence encoder; a temporary SQLite file is the most a test may open.

The fixtures that would break those rules are overridden here: asking for the encoder or
the scripted server fails the test, `make_deps` (so `deps` too) gives services whose
vector index and encoder fail any test that uses them, and a network socket or a
subprocess fails the test that opens it.
"""

from __future__ import annotations

import dataclasses
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from core.deps import Deps
from core.models import ModelRegistry
from stores.indexing import Indexer
from stores.relational import RelationalStore
from stores.services import build_deps
from tests.support.services import closing_each, isolated_settings

if TYPE_CHECKING:  # the graphs it builds load with the fixture
    from tests.support.worlds import RerankWorld

MOVE = "that test belongs in tests/integration"


class Unreachable:
    """Stands in for the vector index and the encoder: any use fails the test."""

    name = "unreachable"

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, attribute: str) -> NoReturn:
        raise AssertionError(f"a unit test used the {self._what} ({attribute}): {MOVE}")


@pytest.fixture(autouse=True)
def _in_process_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connecting or binding a network socket, or starting a process, fails the test."""

    def refuse(what: str) -> Callable[..., NoReturn]:
        def refused(*args: Any, **kwargs: Any) -> NoReturn:
            raise AssertionError(f"a unit test {what}: {MOVE} or tests/e2e")

        return refused

    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, refuse(f"called socket.{name}"))
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("started a process"))


@pytest.fixture(scope="session")
def embedder() -> NoReturn:
    pytest.fail(f"a unit test asked for the sentence encoder: {MOVE}")


@pytest.fixture
def server() -> NoReturn:
    pytest.fail(f"a unit test asked for a server on loopback: {MOVE}")


@pytest.fixture
def store(relational_store: RelationalStore) -> RelationalStore:
    """The store on each engine (SQLite, and PostgreSQL where a server answers)."""
    return relational_store


@pytest.fixture
def make_deps(tmp_path: Path) -> Iterator[Callable[..., Deps]]:
    """`make_deps(models={...}, **settings)`: a temporary SQLite store and these chat models
    (none by default); no vector index, no encoder."""

    def build(models: dict[str, Any] | None = None, **overrides: Any) -> Deps:
        settings = isolated_settings(tmp_path / "data", **overrides)
        encoder = Unreachable("sentence encoder")
        deps = build_deps(settings, models=ModelRegistry.fixed(models or {}), embedder=encoder)
        # The vector store `build_deps` made connects on first use: it is never used.
        vectors = Unreachable("vector index")
        return dataclasses.replace(
            deps, vectors=vectors, indexer=Indexer(deps.store, vectors, encoder)
        )

    with closing_each(build) as make:
        yield make


@pytest.fixture
def world(make_deps: Callable[..., Deps]) -> RerankWorld:
    """The reranker's world (user 1's topics and person, user 2's secret topic) in SQLite."""
    from tests.support.worlds import build_rerank_world

    return build_rerank_world(make_deps())
