"""A large import's first step, storing and indexing, shows how far it is between 0 and
100 % (the indexer's batches), and the memory graph's embedding splitter reads the
messages' vectors from the index instead of embedding the chunk again."""

from __future__ import annotations

import io
import threading
from collections import Counter
from pathlib import Path

import numpy as np
from rich.console import Console

from app.memory import ingest
from core.deps import Deps
from core.progress import ProgressBoard
from core.tuning import BUNDLED_EMBEDDER
from stores import embedders
from stores.embedders import Embedder
from stores.indexing import BATCH
from stores.sentence_encoder import UniversalSentenceEncoderEmbeddings
from tests.support.services import local_deps

SMALL_CACHE = 512

WORDS = ["поезд", "билеты", "Казань", "train", "tickets", "meeting", "coffee", "отчёт"]


def contents(count: int) -> list[str]:
    return [f"{WORDS[i % len(WORDS)]} {WORDS[(i * 3) % len(WORDS)]} {i}" for i in range(count)]


class CountingEncoder(UniversalSentenceEncoderEmbeddings):
    """The real encoder, counting every text it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: Counter[str] = Counter()
        self._counting = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._counting:
            self.texts.update(texts)
        return super().embed_documents(texts)


async def test_storing_and_indexing_reports_each_batch_then_the_total(
    tmp_path: Path, store_engine: str, make_messages, monkeypatch
) -> None:
    # More messages than the embedder's cache holds, so a second embedding of a chunk's
    # messages would reach the encoder again (a smaller cache keeps the import short).
    monkeypatch.setattr(embedders, "CACHE_SIZE", SMALL_CACHE)
    messages = make_messages(contents(max(BATCH * 2, SMALL_CACHE) + 88))
    encoder = CountingEncoder()
    deps = local_deps(tmp_path / "data", Embedder(encoder, name=BUNDLED_EMBEDDER))
    sink = io.StringIO()
    board = ProgressBoard(Console(file=sink, force_terminal=False, width=200), interval_s=0)
    try:
        report = await ingest(deps, messages, user_id=1, progress=board)
    finally:
        deps.close()

    assert report["new_messages"] == len(messages) and report["uncovered"] == []
    assert {encoder.texts[message["content"]] for message in messages} == {1}, (
        "each message embedded once: the splitter reads the index's vectors"
    )
    storing = [line for line in sink.getvalue().splitlines() if line.startswith("stor")]
    total = len(messages)
    assert any(
        line.startswith(f"storing and indexing ({total} new): {BATCH}/{total} messages")
        for line in storing
    ), storing
    assert any(f": {2 * BATCH}/{total} messages" in line for line in storing), storing
    assert storing[-1].startswith(f"stored and indexed ({total} new): {total}/{total} messages")
    assert not any(line.startswith("stored and indexed") for line in storing[:-1]), storing


async def test_a_reimport_is_done_at_once_with_nothing_new(deps: Deps, make_messages) -> None:
    messages = make_messages(contents(20))
    await ingest(deps, messages, user_id=1)
    sink = io.StringIO()
    board = ProgressBoard(Console(file=sink, force_terminal=False, width=200), interval_s=0)

    await ingest(deps, messages, user_id=1, progress=board)

    storing = [line for line in sink.getvalue().splitlines() if line.startswith("stor")]
    assert storing == [storing[0]] and storing[0].startswith(
        "stored and indexed (0 new): 20/20 messages (100%)"
    ), storing


async def test_message_vectors_come_from_the_index_and_queued_ones_are_embedded(
    deps: Deps, make_messages
) -> None:
    rows = deps.indexer.store_messages(1, make_messages(contents(12)))
    texts = [row["content"] for row in rows]
    expected = deps.embedder.encode(texts)
    deps.embedder._cache.clear()
    calls = deps.embedder.batcher.calls

    vectors = deps.indexer.message_vectors(1, rows)

    assert deps.embedder.batcher.calls == calls, "every vector was read from the index"
    assert vectors.shape == expected.shape
    assert np.allclose(vectors, expected, atol=1e-5)

    edited = deps.store.messages.rewrite(1, rows[4]["id"], "совсем другой текст", edit=True)
    assert edited is not None
    rows[4] = edited
    vectors = deps.indexer.message_vectors(1, rows)

    assert deps.embedder.batcher.calls == calls + 1, "only the edited message was embedded"
    assert np.allclose(vectors[4], deps.embedder.encode(["совсем другой текст"])[0], atol=1e-5)
    assert not np.allclose(vectors[4], expected[4], atol=1e-2)
