"""Fixtures shared by the end-to-end tests."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chroma_server import ChromaServer
from tests.support.running_bot import start_bot  # noqa: F401  (test_bot*.py's bot, running)


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    """A Chroma server process on its own data folder, stopped after the test."""
    server = ChromaServer(tmp_path / "chroma-server")
    server.start()
    yield server
    server.stop()
