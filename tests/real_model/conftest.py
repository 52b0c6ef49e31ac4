"""The real-model tier: one tiny local model server (llama.cpp, SmolLM2-135M, one thread)
for the whole test session, and services whose every agent asks it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.deps import Deps
from core.models import ModelRegistry
from core.ports import Embedder
from core.settings import Settings
from stores.services import build_deps
from tests.support.local_model import TINY_MODEL_SETTINGS, LocalModel
from tests.support.services import closing_each


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModel]:
    with LocalModel(tmp_path_factory.mktemp("local-model") / "server.log") as server:
        yield server


@pytest.fixture
def tiny_options(local_model: LocalModel, tmp_path: Path) -> dict[str, Any]:
    """The settings of services on the tiny model, as keyword arguments."""
    return {
        "data_dir": tmp_path / "data",
        "llm_base_url": local_model.base_url,
        **TINY_MODEL_SETTINGS,
    }


@pytest.fixture
def make_tiny_deps(
    tiny_options: dict[str, Any], embedder: Embedder
) -> Iterator[Callable[..., Deps]]:
    """`make_tiny_deps(**settings)`: services whose every agent asks the tiny model (a
    `models` argument, as the bot harness passes, is ignored)."""

    def build(models: Any = None, **overrides: Any) -> Deps:
        settings = Settings(_env_file=None, **{**tiny_options, **overrides})
        return build_deps(settings, models=ModelRegistry(settings), embedder=embedder)

    with closing_each(build) as make:
        yield make
