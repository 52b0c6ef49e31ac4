"""`topica bench search`: how search scales with the number of a user's topics.

For each size N, a fresh process builds a real SQLite + Chroma store holding N
synthetic topics of one user (two messages each, both indexed like real ones)
among 24 other users who hold N/4 topics between them, then measures:

- the search stage (`nodes.search.hybrid_search`: topic and message vectors, BM25
  over topics and messages, RRF) and the whole retrieval without an LLM (the
  `enrich → search → rerank` graph of `bench.topica`), p50/p95 over distinct queries;
- the query encoding of the local embedder, apart: it does not depend on N, and the
  synthetic vectors come from a lookup so that queries land near their cluster;
- index build time (SQLite rows, then Chroma upserts) and memory: the process's
  peak RSS and the RSS the build added;
- beside it, brute-force numpy cosine over the user's N topic vectors (top 50), its
  build time (loading the vectors from the store into one matrix) and its
  tracemalloc peak; and the same vectors in a fresh Chroma collection queried
  directly (one vector query, without SQLite, BM25 and fusion), each query right after
  its search, so that both see the same load on the machine;
- the local embedder's cost of scoring the passages of 1, 3 and 10 long messages, as the
  context assembly does for the long messages it recalls (`bench.search_baselines`).

The store is used as the application leaves it: SQLite's planner statistics are never
collected (no `ANALYZE`), so lookups must not depend on them.

Vectors are random unit vectors around cluster centroids (cosine ≈ 0.7 to their
centroid); texts draw from each cluster's own pseudo-words plus common ones, so
BM25 has realistic selectivity. Each size runs in its own process, so memory
figures do not carry over between sizes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import resource
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from rich.console import Console

from bench.search_baselines import (
    BATCH,
    TARGET_USER,
    BareChroma,
    encoder_costs,
    numpy_baseline,
    timed_ms,
)
from core.progress import ProgressBoard, progress_board

DIMENSIONS = 512
OTHER_USERS = 24
OTHER_USERS_SHARE = 0.25
MESSAGES_PER_TOPIC = 2
SEARCH_QUERIES = 100
RETRIEVAL_QUERIES = 50
QUERY_TOPICS_BUDGET = 1_000_000
"""Fewer queries for large sizes: at most this many topics searched in all (at least 20)."""
WORDS_PER_CLUSTER = 40
COMMON_WORDS = 300
SYLLABLES = ("ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "da", "pe", "zu", "ri", "mo", "le")


def query_count(most: int, size: int) -> int:
    return max(20, min(most, QUERY_TOPICS_BUDGET // size))


def clusters_for(size: int) -> int:
    return max(16, size // 50)


class LookupEmbeddings(Embeddings):
    """Vectors for known texts (the synthetic queries); anything else gets a random one."""

    def __init__(self, known: dict[str, np.ndarray], seed: int = 7) -> None:
        self.known = known
        self.random = np.random.default_rng(seed)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text).tolist() for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text).tolist()

    def _vector(self, text: str) -> np.ndarray:
        found = self.known.get(text)
        return found if found is not None else unit(self.random.normal(size=DIMENSIONS))


def unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class Synthetic:
    """Clustered vectors and texts; deterministic for a given size."""

    def __init__(self, size: int, seed: int = 42) -> None:
        self.random = np.random.default_rng(seed + size)
        self.clusters = clusters_for(size)
        self.centroids = unit(self.random.normal(size=(self.clusters, DIMENSIONS)))
        words = self._words(self.clusters * WORDS_PER_CLUSTER + COMMON_WORDS)
        self.cluster_words = [
            words[i * WORDS_PER_CLUSTER : (i + 1) * WORDS_PER_CLUSTER] for i in range(self.clusters)
        ]
        self.common_words = words[-COMMON_WORDS:]

    def _words(self, count: int) -> list[str]:
        words: dict[str, None] = {}
        while len(words) < count:
            length = int(self.random.integers(3, 6))
            picks = self.random.integers(0, len(SYLLABLES), size=length)
            words.setdefault("".join(SYLLABLES[i] for i in picks), None)
        return list(words)

    def vectors(self, cluster_ids: np.ndarray) -> np.ndarray:
        # Noise of norm ~1 around a unit centroid: cosine to the centroid is about 0.7.
        noise = self.random.normal(size=(len(cluster_ids), DIMENSIONS)) / np.sqrt(DIMENSIONS)
        return unit(self.centroids[cluster_ids] + noise)

    def text(self, cluster: int, words: int) -> str:
        own = self.random.choice(self.cluster_words[cluster], size=words // 2)
        common = self.random.choice(self.common_words, size=words - words // 2)
        return " ".join([*own, *common])

    def query(self, cluster: int) -> tuple[str, np.ndarray]:
        text = " ".join(self.random.choice(self.cluster_words[cluster], size=3))
        return text, self.vectors(np.array([cluster]))[0]


def rss_mb() -> float:
    """The process's current resident set size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def build_store(
    deps, synthetic: Synthetic, size: int, progress: ProgressBoard
) -> dict[str, Any]:
    """Users' messages and topics in SQLite, then their vectors in Chroma."""
    from core.records import NewMessage

    owners = [(TARGET_USER, size)]
    others = int(size * OTHER_USERS_SHARE)
    owners += [(TARGET_USER + 1 + i, others // OTHER_USERS) for i in range(OTHER_USERS)]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    sqlite_s = chroma_s = 0.0
    target_ids: list[int] = []
    total = sum(count for _, count in owners)
    building = progress.task(f"{size:,} topics: building the store", total, unit="topics")
    for user_id, count in owners:
        if count == 0:
            continue
        cluster_ids = synthetic.random.integers(0, synthetic.clusters, size=count)
        began = time.perf_counter()
        messages = [
            NewMessage(
                external_id=f"u{user_id}-t{topic}-m{index}",
                role="user" if index % 2 == 0 else "assistant",
                content=synthetic.text(int(cluster_ids[topic]), 14),
                created_at=(start + timedelta(minutes=topic * 10 + index)).isoformat(),
                author=None,
            )
            for topic in range(count)
            for index in range(MESSAGES_PER_TOPIC)
        ]
        rows = await asyncio.to_thread(deps.store.messages.add, user_id, messages)
        drafts = [
            (
                synthetic.text(int(cluster_ids[topic]), 24),
                [
                    row["id"]
                    for row in rows[topic * MESSAGES_PER_TOPIC : (topic + 1) * MESSAGES_PER_TOPIC]
                ],
            )
            for topic in range(count)
        ]
        topics = []
        for first in range(0, len(drafts), BATCH):
            topics += await asyncio.to_thread(
                deps.store.topics.save, user_id, drafts[first : first + BATCH]
            )
        sqlite_s += time.perf_counter() - began

        topic_vectors = synthetic.vectors(cluster_ids)
        message_vectors = synthetic.vectors(np.repeat(cluster_ids, MESSAGES_PER_TOPIC))
        began = time.perf_counter()
        for kind, ids, vectors in (
            ("topics", [topic["id"] for topic in topics], topic_vectors),
            ("messages", [row["id"] for row in rows], message_vectors),
        ):
            for first in range(0, len(ids), BATCH):
                await asyncio.to_thread(
                    deps.vectors.upsert,
                    kind,
                    user_id,
                    ids[first : first + BATCH],
                    vectors[first : first + BATCH],
                )
        chroma_s += time.perf_counter() - began
        building.advance(count)
        if user_id == TARGET_USER:
            target_ids = [topic["id"] for topic in topics]
    return {
        "sqlite_s": sqlite_s,
        "chroma_s": chroma_s,
        "total_topics": total,
        "users": len(owners),
        "target_ids": target_ids,
    }


def sample_queries(synthetic: Synthetic, most: int, size: int) -> list[tuple[str, np.ndarray]]:
    """Queries near randomly drawn clusters, fewer for large sizes (`query_count`)."""
    clusters = synthetic.random.integers(0, synthetic.clusters, query_count(most, size))
    return [synthetic.query(int(cluster)) for cluster in clusters]


async def time_searches(
    deps, context, queries: list[tuple[str, np.ndarray]], bare: BareChroma, searches: Any
) -> tuple[list[float], list[float]]:
    """Each query's search (ms), then the same query alone on the bare Chroma collection:
    one after the other, so both see the same load on the machine."""
    from nodes.response.search import hybrid_search

    await asyncio.to_thread(hybrid_search, deps, context, [queries[0][0]])  # warm-up
    search_samples, chroma_samples = [], []
    for text, vector in queries:
        began = time.perf_counter()
        await asyncio.to_thread(hybrid_search, deps, context, [text])
        search_samples.append((time.perf_counter() - began) * 1000)
        chroma_samples.append(await asyncio.to_thread(bare.query_ms, vector))
        searches.advance()
    return search_samples, chroma_samples


async def time_retrievals(
    deps, context, queries: list[tuple[str, np.ndarray]], retrievals: Any
) -> tuple[list[float], list[int]]:
    """Each query's whole retrieval without an LLM (ms), and its candidates."""
    from bench.topica import build_retrieval_graph

    graph = build_retrieval_graph(deps).compile(name="retrieval")
    samples, candidates = [], []
    for text, _ in queries:
        began = time.perf_counter()
        state = await graph.ainvoke({"text": text}, context=context)
        samples.append((time.perf_counter() - began) * 1000)
        candidates.append(len(state["found"]["topics"]))
        retrievals.advance()
    return samples, candidates


async def measure_size(size: int, progress: ProgressBoard) -> dict[str, Any]:
    """Build the store for `size` topics in a temporary directory and time everything."""
    from core.context import ResponseContext
    from core.models import ModelRegistry
    from core.settings import Settings
    from stores.embedders import Embedder
    from stores.services import build_deps

    synthetic = Synthetic(size)
    queries = sample_queries(synthetic, SEARCH_QUERIES, size)
    retrieval_queries = sample_queries(synthetic, RETRIEVAL_QUERIES, size)
    known = dict(queries + retrieval_queries)
    directory = Path(tempfile.mkdtemp(prefix=f"topica-bench-{size}-"))
    try:
        settings = Settings(_env_file=None, data_dir=directory)
        embedder = Embedder(LookupEmbeddings(known), name="synthetic-512")
        deps = build_deps(settings, models=ModelRegistry.fixed({}), embedder=embedder)
        rss_before = rss_mb()
        began = time.perf_counter()
        built = await build_store(deps, synthetic, size, progress)
        build_s = time.perf_counter() - began
        rss_after = rss_mb()

        baselines = progress.task(f"{size:,} topics: numpy, bare Chroma", 2, unit="baselines")
        query_vectors = np.stack([vector for _, vector in queries])
        baseline = await asyncio.to_thread(numpy_baseline, deps, built["target_ids"], query_vectors)
        baselines.advance()
        bare = await asyncio.to_thread(BareChroma, directory, baseline.pop("index"))
        baselines.advance()
        context = ResponseContext.from_settings(settings, user_id=TARGET_USER)
        searches = progress.task(f"{size:,} topics: searches", len(queries), unit="queries")
        search_samples, chroma_samples = await time_searches(deps, context, queries, bare, searches)
        retrievals = progress.task(
            f"{size:,} topics: retrievals", len(retrieval_queries), unit="queries"
        )
        retrieval_samples, candidates = await time_retrievals(
            deps, context, retrieval_queries, retrievals
        )
        deps.close()
        encoder = encoder_costs(directory, [text for text, _ in queries], synthetic.common_words)
        return {
            "topics": size,
            "total_topics": built["total_topics"],
            "users": built["users"],
            "messages": built["total_topics"] * MESSAGES_PER_TOPIC,
            "clusters": synthetic.clusters,
            "build_s": build_s,
            "sqlite_build_s": built["sqlite_s"],
            "chroma_build_s": built["chroma_s"],
            "queries": {"search": len(queries), "retrieval": len(retrieval_queries)},
            "search": timed_ms(search_samples),
            "retrieval": timed_ms(retrieval_samples),
            "mean_candidates": statistics.fmean(candidates),
            **encoder,
            "numpy": baseline,
            "chroma_query": {"build_s": bare.build_s, **timed_ms(chroma_samples)},
            "build_rss_mb": rss_after - rss_before,
            "peak_rss_mb": peak_rss_mb(),
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _measure_in_process(size: int) -> dict[str, Any]:
    """One size in a child process, showing its progress on the inherited stderr."""
    with progress_board(Console(stderr=True)) as progress:
        return asyncio.run(measure_size(size, progress))


async def bench_search(sizes: list[int]) -> dict[str, Any]:
    """Measure each size in a fresh process (`bench.scale_report` writes and shows it)."""
    results = []
    spawn = multiprocessing.get_context("spawn")
    loop = asyncio.get_running_loop()
    for size in sizes:
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            results.append(await loop.run_in_executor(pool, _measure_in_process, size))
    return {"sizes": results}
