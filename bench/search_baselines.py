"""What `topica bench search` sets beside the search: brute-force numpy cosine, one bare
Chroma query over the same vectors, and the local embedder's costs (a query; the
passages of long messages that the context assembly scores, `nodes.response.ranking.passages`)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.metrics import percentile
from stores.chroma_clients import collection_configuration

TOP_K = 50
BATCH = 4000
TARGET_USER = 1
ENCODING_QUERIES = 50
LONG_MESSAGE_CHARS = 2_400
"""A long answer: twice `excerpt_long_answer_chars`, so it is shown by its passages."""
LONG_MESSAGES = (1, 3, 10)
"""Long messages recalled in one turn, whose passages are embedded for it."""
PASSAGE_SAMPLES = 10


def timed_ms(samples: Sequence[float]) -> dict[str, float | None]:
    return {"p50_ms": percentile(samples, 50), "p95_ms": percentile(samples, 95)}


class BareChroma:
    """The user's topic vectors alone in a fresh Chroma collection, queried directly: one
    vector query, without SQLite, BM25 and fusion (the floor under the search stage's
    vector queries)."""

    def __init__(self, directory: Path, vectors: np.ndarray) -> None:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        client = chromadb.PersistentClient(
            path=str(directory / "chroma-alone"),
            settings=ChromaSettings(anonymized_telemetry=False),
        )
        self.collection = client.create_collection(
            "topics-user", embedding_function=None, configuration=collection_configuration()
        )
        began = time.perf_counter()
        for first in range(0, len(vectors), BATCH):
            self.collection.add(
                ids=[str(i) for i in range(first, min(first + BATCH, len(vectors)))],
                embeddings=vectors[first : first + BATCH],
            )
        self.build_s = time.perf_counter() - began

    def query_ms(self, vector: np.ndarray) -> float:
        began = time.perf_counter()
        self.collection.query(query_embeddings=[vector], n_results=TOP_K, include=["distances"])
        return (time.perf_counter() - began) * 1000


def numpy_baseline(deps, topic_ids: Sequence[int], queries: np.ndarray) -> dict[str, Any]:
    """Brute-force cosine top-k over the user's topic vectors, loaded from the vector store."""
    tracemalloc.start()
    began = time.perf_counter()
    loaded: dict[int, np.ndarray] = {}
    for first in range(0, len(topic_ids), BATCH):
        loaded.update(deps.vectors.vectors("topics", TARGET_USER, topic_ids[first : first + BATCH]))
    index = np.stack([loaded[i] for i in topic_ids])
    build_s = time.perf_counter() - began
    samples = []
    for query in queries:
        began = time.perf_counter()
        scores = index @ query
        top = np.argpartition(-scores, min(TOP_K, len(scores) - 1))[:TOP_K]
        ranked = top[np.argsort(-scores[top])]
        samples.append((time.perf_counter() - began) * 1000)
        assert len(ranked) == min(TOP_K, len(scores))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "build_s": build_s,
        "tracemalloc_peak_mb": peak / 2**20,
        **timed_ms(samples),
        "index": index,
    }


def encoder_costs(directory: Path, texts: list[str], words: Sequence[str]) -> dict[str, Any]:
    """The configured local embedder, after a warm-up: how long it takes to encode each
    query (`query_encoding`), and to score the passages of 1, 3 and 10 long messages
    against a query as the context assembly does (`passage_embedding`, texts it has not
    seen, so none comes from its cache)."""
    from core.settings import Settings
    from stores.embedders import build_embedder

    encoder = build_embedder(Settings(_env_file=None, data_dir=directory))
    encoder.encode(["warm-up"])
    samples = []
    for text in texts[:ENCODING_QUERIES]:
        began = time.perf_counter()
        encoder.encode([text])
        samples.append((time.perf_counter() - began) * 1000)
    return {
        "query_encoding": timed_ms(samples),
        "passage_embedding": [
            passage_embedding(encoder, texts[0], words, count) for count in LONG_MESSAGES
        ],
    }


def passage_embedding(encoder, query: str, words: Sequence[str], messages: int) -> dict[str, Any]:
    """Time `passage_scores` over the passages of `messages` long messages made of `words`."""
    from core.context import ResponseContext
    from nodes.response.ranking.passages import passage_scores, split_passages

    passage_chars = ResponseContext(user_id=TARGET_USER).tuning.excerpt_passage_chars
    random = np.random.default_rng(messages)
    samples, passages = [], 0
    for _ in range(PASSAGE_SAMPLES):
        texts = [
            split_passages(long_message(random, words), passage_chars) for _ in range(messages)
        ]
        flat = [passage for parts in texts for passage in parts]
        began = time.perf_counter()
        passage_scores(encoder, [query])(flat)
        samples.append((time.perf_counter() - began) * 1000)
        passages = len(flat)
    return {"long_messages": messages, "passages": passages, **timed_ms(samples)}


def long_message(random: np.random.Generator, words: Sequence[str]) -> str:
    """About `LONG_MESSAGE_CHARS` of sentences of 12 words drawn from `words`."""
    sentences: list[str] = []
    while sum(len(sentence) + 1 for sentence in sentences) < LONG_MESSAGE_CHARS:
        sentences.append(" ".join(random.choice(words, size=12)).capitalize() + ".")
    return " ".join(sentences)
