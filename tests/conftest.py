"""Fixtures for every tier, and the tier markers.

Real SQLite and a real (persistent, per-test temporary) Chroma, the real local
multilingual embedder, and scripted fake chat models that record their prompts.

Every test that builds services (`make_settings`, `make_deps`, `deps`, `relational_store`
and the fixtures built on them) runs on both relational engines: SQLite, and PostgreSQL
in a database created for the test session on the local server (a schema per test),
which is skipped with its reason only where no server answers. `--stores sqlite` (or
`TOPICA_TEST_STORES=sqlite`) runs one engine.
The environment's `TOPICA_*` variables and `.env` are kept out, so a developer's
configuration can never point a test at a live model or a Chroma server.

Each test is marked with its tier, the folder it lies in (`unit`, `integration`,
`e2e`), so `pytest -m unit` runs the same tests as `pytest tests/unit`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from core.deps import Deps
from core.ports import Embedder
from core.records import NewMessage
from core.settings import Settings
from stores.embedders import build_embedder
from stores.relational import RelationalStore
from stores.services import build_relational_store
from tests.support.messages import new_messages
from tests.support.services import (
    StoreEngine,
    closing_each,
    isolated_settings,
    local_deps,
    schema_for,
)

if TYPE_CHECKING:  # LangGraph, LangChain, aiohttp and psycopg load with the fixtures that use them
    from langgraph.runtime import Runtime

    from core.context import MemoryContext
    from tests.support.models import ScriptedChatModel
    from tests.support.openai_server import ScriptedOpenAI

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e", "real_model")


POSTGRES_SERVER = os.environ.get("TOPICA_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stores",
        default=os.environ.get("TOPICA_TEST_STORES", "sqlite,postgres"),
        help="relational engines the store-backed tests run on (comma-separated)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_engine" in metafunc.fixturenames:
        engines = [name for name in metafunc.config.getoption("stores").split(",") if name]
        only = metafunc.definition.get_closest_marker("stores")
        if only is not None:  # a test of one engine's features (`@pytest.mark.stores(...)`)
            engines = [name for name in engines if name in only.args]
        metafunc.parametrize("store_engine", engines, indirect=True, scope="session")


@pytest.fixture(scope="session")
def store_engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """The relational engine (a parameter): for PostgreSQL, a fresh database on the local
    server for the whole session, dropped at its end, and the migrated schemas its tests
    take in turn."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    from tests.support.postgres import MigratedSchemas, postgres_test_database

    with postgres_test_database(POSTGRES_SERVER) as url:
        if url is None:
            pytest.skip(f"no PostgreSQL server answers at {POSTGRES_SERVER}")
        StoreEngine.database_url = url
        StoreEngine.schemas = MigratedSchemas(url)
        try:
            yield "postgres"
        finally:
            StoreEngine.schemas.close()
            StoreEngine.database_url = StoreEngine.schemas = None


@pytest.fixture(autouse=True)
def _store_environment(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test on PostgreSQL gets the database and a schema of its own in its environment:
    migrated and empty, as a new deployment's store leaves it."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("store_engine") != "postgres":
        yield
        return
    request.getfixturevalue("store_engine")
    schema, schemas = schema_for(request.node.nodeid), StoreEngine.schemas
    assert schemas is not None
    schemas.lend(schema)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOPICA_DATABASE_URL", str(StoreEngine.database_url))
        patch.setenv("TOPICA_DATABASE_SCHEMA", schema)
        yield
    schemas.take_back(schema)


ONE_WORKER = (
    "tests/unit/test_bot_config.py",
    "tests/unit/test_bot_grouping.py",
    "tests/unit/test_bot_responses.py",
    "tests/unit/test_webhook_reply.py",
)
"""The unit tests that build aiogram's types (seconds to import): on pytest-xdist they all
run on one worker, so one worker imports aiogram, not each."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist load` (`-n` alone), except that the tests of `ONE_WORKER` go as one unit."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerForSome(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "one worker" if nodeid.split("::", 1)[0] in ONE_WORKER else nodeid

    return OneWorkerForSome(config, log)


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


@pytest.fixture(autouse=True)
def _document_reads_accepted() -> None:
    """A bot shut down in this process (an in-process test bot) refuses document reads
    from then on, as a real bot's shutdown does; each test starts with reads accepted."""
    from app.reading import resume_readers

    resume_readers()


@pytest.fixture
def make_settings(store_engine: str) -> Callable[..., Settings]:
    """`make_settings(data_dir, **overrides)`: settings isolated from the environment."""
    return isolated_settings


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real local multilingual USE, loaded once for the whole session."""
    return build_embedder(isolated_settings(Path("unused")))


@pytest.fixture
def relational_store(store_engine: str, tmp_path: Path) -> Iterator[RelationalStore]:
    """The relational store alone, on the test's engine."""
    store = build_relational_store(isolated_settings(tmp_path / "data"))
    yield store
    store.close()


@pytest.fixture
def make_deps(
    tmp_path: Path, embedder: Embedder, store_engine: str
) -> Iterator[Callable[..., Deps]]:
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
    from tests.support.models import scripted_model

    return scripted_model


@pytest.fixture
def runtime_for() -> Callable[..., Runtime[MemoryContext]]:
    """`runtime_for(user_id, **context)`: the runtime a memory-graph node receives."""
    from tests.support.services import memory_runtime

    return memory_runtime


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ScriptedOpenAI]:
    """The scripted OpenAI-compatible server on loopback, for the test's duration."""
    from tests.support.openai_server import ScriptedOpenAI

    async with ScriptedOpenAI() as scripted:
        yield scripted
