"""Encode once (issue 15): a turn's text goes through the sentence encoder once, and
concurrent callers share the encoder's calls. Counted on the real local encoder."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from app.turns import run_turn
from stores.embedders import Embedder
from stores.sentence_encoder import UniversalSentenceEncoderEmbeddings
from tests.support.messages import new_messages
from tests.support.services import local_deps

pytestmark = pytest.mark.timeout(120)


class CountingEncoder(UniversalSentenceEncoderEmbeddings):
    """The real encoder, counting its calls and every text it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.texts: Counter[str] = Counter()
        self._counting = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._counting:
            self.calls += 1
            self.texts.update(texts)
        return super().embed_documents(texts)


async def test_a_turn_embeds_its_text_once(tmp_path: Path) -> None:
    encoder = CountingEncoder()
    deps = local_deps(tmp_path / "data", Embedder(encoder, name="use-multilingual-v3"))
    try:
        rows = deps.indexer.store_messages(
            1, new_messages(["We booked a table at Pushkin for mom's birthday.", "Great!"])
        )
        deps.store.topics.save(1, [("Mom's birthday", [row["id"] for row in rows])])
        deps.indexer.index_all(1)
        question = "Where do we celebrate mom's birthday?"

        result = await run_turn(deps, 1, question)

        assert result["topics"], "the turn searched and recalled the topic"
        assert encoder.texts[question] == 1
        # Nothing else went through the encoder twice either (messages, topic, answer).
        assert set(encoder.texts.values()) == {1}, encoder.texts.most_common(3)
    finally:
        deps.close()


def test_concurrent_encodings_share_calls_and_each_gets_its_own_vector() -> None:
    texts = [f"Message number {i} about the trip to Kazan" for i in range(24)]
    queued = threading.Event()

    class FirstCallWaits(CountingEncoder):
        """The first call holds the encoder until every other caller has queued."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if self.calls == 0:
                assert queued.wait(30)
            return super().embed_documents(texts)

    encoder = FirstCallWaits()
    embedder = Embedder(encoder, name="use-multilingual-v3", batch_size=64)
    alone = Embedder(UniversalSentenceEncoderEmbeddings(), name="alone").encode(texts)
    vectors: dict[int, np.ndarray] = {}

    def encode(index: int) -> None:
        vectors[index] = embedder.encode_query(texts[index])

    threads = [threading.Thread(target=encode, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    while embedder.batcher.waiting() < len(texts) - 1:
        threading.Event().wait(0.01)
    queued.set()
    for thread in threads:
        thread.join(30)

    assert sum(encoder.texts.values()) == len(texts)  # each text once
    assert encoder.calls == 2  # the first caller alone, then everyone queued, together
    for index, expected in enumerate(alone):
        vector = vectors[index]
        assert float(np.dot(vector, expected)) == pytest.approx(1.0, abs=1e-4)


def test_an_encoder_error_reaches_every_caller_of_its_batch() -> None:
    class Broken(UniversalSentenceEncoderEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("encoder down")

    embedder = Embedder(Broken(), name="broken")

    async def both() -> list[object]:
        calls = (asyncio.to_thread(embedder.encode, [text]) for text in ("one", "two"))
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(both())

    assert [str(outcome) for outcome in outcomes] == ["encoder down", "encoder down"]
