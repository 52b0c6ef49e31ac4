"""Settings and services built for a test: never from `.env` or the environment."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.deps import Deps
from core.models import ModelRegistry
from core.ports import Embedder
from core.settings import Settings
from stores.services import build_deps

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from core.context import MemoryContext
    from tests.support.postgres import MigratedSchemas


class StoreEngine:
    """The PostgreSQL database of the test session, while its tests run
    (`tests/conftest.py`). A test on PostgreSQL has `TOPICA_DATABASE_URL` and a schema of
    its own in its environment, which its settings, the CLI and the processes it starts
    all read; fixtures built outside a test (module or session scope) stay on SQLite."""

    database_url: str | None = None
    schemas: MigratedSchemas | None = None
    """The migrated schemas the session's PostgreSQL tests take in turn."""


def schema_for(key: str) -> str:
    """A PostgreSQL schema of its own for `key` (a test's id)."""
    return f"test_{hashlib.sha1(key.encode()).hexdigest()[:16]}"


def isolated_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings from defaults and `overrides` only (no `.env`; of the environment only
    `TOPICA_*` variables a test set, its store engine among them)."""
    return Settings(_env_file=None, data_dir=data_dir, **overrides)


def local_deps(
    data_dir: Path, embedder: Embedder, models: dict[str, Any] | None = None, **overrides: Any
) -> Deps:
    """Real SQLite + Chroma in `data_dir` with this embedder and exactly these chat models
    (none by default: every agent takes its non-LLM path)."""
    settings = isolated_settings(data_dir, **overrides)
    return build_deps(
        settings, models=ModelRegistry.fixed(models or {}, settings), embedder=embedder
    )


def memory_runtime(user_id: int = 1, **overrides: Any) -> Runtime[MemoryContext]:
    """The runtime a memory-graph node receives, for calling a node alone."""
    from langgraph.runtime import Runtime

    from core.context import MemoryContext

    return Runtime(context=MemoryContext(user_id=user_id, **overrides))


@contextmanager
def closing_each(build: Callable[..., Deps]) -> Iterator[Callable[..., Deps]]:
    """`build` as it is, except that every `Deps` it made is closed when the block ends."""
    opened: list[Deps] = []

    def make(*args: Any, **kwargs: Any) -> Deps:
        deps = build(*args, **kwargs)
        opened.append(deps)
        return deps

    try:
        yield make
    finally:
        for deps in opened:
            deps.close()
