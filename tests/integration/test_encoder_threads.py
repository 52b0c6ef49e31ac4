"""The local encoder keeps BLAS on one thread while it encodes (issue 15, load: OpenBLAS's
worker threads spun after each small product and starved concurrent turns), and
`Embedder.load` readies a model without encoding anything (the bot calls it at start-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from core.settings import EmbeddingsProvider
from stores.embedders import build_embedder
from stores.sentence_encoder import UniversalSentenceEncoderEmbeddings
from tests.support.processes import free_port
from tests.support.services import isolated_settings

pytestmark = pytest.mark.timeout(120)

TEXTS = ["Марципан третий день почти ничего не ест.", "We booked a table at Pushkin."]


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


class WatchedTokenizer:
    """The encoder's tokenizer, noting BLAS's thread counts whenever it is asked to
    tokenize, which the encoder does inside its encode call."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self.seen: list[list[int]] = []

    def encode(self, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(blas_threads())
        return self._tokenizer.encode(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)


def test_the_encoder_runs_blas_on_one_thread_and_gives_the_same_vectors():
    if max(blas_threads(), default=1) < 2:
        pytest.skip("BLAS runs on one thread here anyway: nothing to limit")
    embeddings = UniversalSentenceEncoderEmbeddings()
    backend = embeddings.load()
    before = np.asarray(embeddings.embed_documents(TEXTS))
    outside = blas_threads()
    watched = WatchedTokenizer(backend.sp)
    backend.sp = watched

    after = np.asarray(embeddings.embed_documents(TEXTS))

    assert watched.seen, "the encoder tokenized inside its call"
    assert all(threads == [1] for threads in watched.seen)
    assert blas_threads() == outside, "the limit ends with the call"
    assert np.array_equal(after, before)


def test_load_readies_the_local_encoder_without_encoding(tmp_path: Path):
    embedder = build_embedder(isolated_settings(tmp_path / "data"))
    assert not embedder.model.loaded, "created on first use, not loaded"

    embedder.load()

    assert embedder.model.loaded
    assert embedder.batcher.calls == 0, "nothing was encoded"
    assert embedder.encode(TEXTS).shape == (2, 512)
    assert embedder.batcher.calls == 1


def test_load_of_a_remote_model_sends_nothing(tmp_path: Path):
    """A remote embedder pointed at a port nobody listens on: building its client sends
    no request, so `load` succeeds (a first text would fail to reach it)."""
    embedder = build_embedder(
        isolated_settings(
            tmp_path / "data",
            embeddings_provider=EmbeddingsProvider.OPENAI,
            embeddings_base_url=f"http://127.0.0.1:{free_port()}/v1",
        )
    )

    embedder.load()

    assert embedder.model is not None
