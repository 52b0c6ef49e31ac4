"""Fixtures of the integration tier only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from core.deps import Deps
from core.ports import Embedder
from core.records import MessageRow
from tests.support.demo import DemoArchive, archive_demo_twice
from tests.support.messages import new_messages
from tests.support.openai_server import ScriptedOpenAI
from tests.support.services import local_deps
from tests.support.worlds import (
    RerankWorld,
    ResponseWorld,
    build_rerank_world,
    build_response_world,
)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def demo_archive(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> AsyncIterator[DemoArchive]:
    """The example session ingested (no models) for users 1 and 2, each twice; built once
    per test session, read-only for the tests."""
    deps = local_deps(tmp_path_factory.mktemp("demo") / "data", embedder)
    yield await archive_demo_twice(deps)
    deps.close()


@pytest.fixture
async def stored(deps: Deps, request: pytest.FixtureRequest) -> list[MessageRow]:
    """The test module's `CONVERSATION` (alternating user and assistant messages `m1, m2,
    …`), stored and indexed for user 1."""
    return deps.indexer.store_messages(1, new_messages(request.module.CONVERSATION))


@pytest_asyncio.fixture
async def llm_world(make_deps: Callable[..., Deps], server: ScriptedOpenAI) -> ResponseWorld:
    """The response world (`tests.support.worlds`) with the responder on the scripted
    server; the enricher and reranker take their non-LLM paths. A module may define its
    own `llm_world`."""
    return await build_response_world(make_deps(models={"responder": server.chat_model()}))


@pytest.fixture
def rerank_world(make_deps: Callable[..., Deps], server: ScriptedOpenAI) -> RerankWorld:
    """The rerank world (`tests.support.worlds`), with the reranker model pointed at the
    scripted server."""
    return build_rerank_world(make_deps(models={"reranker": server.chat_model()}))
