"""A turn's deepest vector list is the exact nearest records, the same in every process."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.tuning import packaged_tuning
from stores.chroma_clients import SEARCH_EF, detach_local_system
from stores.embedders import normalise
from stores.vectors import VectorStore, build_chroma_client

RECORDS = 900
"""Under Chroma's `sync_threshold` (1,000): the graph is built again on each open."""
DIMENSIONS = 512
"""The bundled embedder's."""


def test_a_list_as_deep_as_a_turn_reads_is_the_exact_nearest_records(tmp_path: Path, make_settings):
    depth = packaged_tuning().excerpt_vector_depth
    assert 2 * depth <= SEARCH_EF
    settings = make_settings(tmp_path)
    rng = np.random.default_rng(7)
    stored = normalise(rng.standard_normal((RECORDS, DIMENSIONS)).astype(np.float32))
    client = build_chroma_client(settings)
    VectorStore(lambda: client, "test-embedder").upsert(
        "messages", 1, list(range(1, RECORDS + 1)), stored
    )
    detach_local_system(client)
    # Another process's view: the store opened again, its graph built anew. Searched only
    # as wide as the list is deep, 8 of these 4,000 nearest records were missing.
    reader = VectorStore(lambda: build_chroma_client(settings), "test-embedder")
    queries = normalise(rng.standard_normal((20, DIMENSIONS)).astype(np.float32))
    found = reader.nearest("messages", 1, list(queries), depth)
    for query, hits in zip(queries, found, strict=True):
        exact = np.argsort(-(stored @ query))[:depth] + 1
        assert {record_id for record_id, _ in hits} == set(exact.tolist())


def test_a_collection_made_before_is_searched_as_wide(tmp_path: Path, make_settings):
    settings = make_settings(tmp_path)
    client = build_chroma_client(settings)
    store = VectorStore(lambda: client, "test-embedder")
    name = store.collection_name("topics", 1)
    made = client.create_collection(
        name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    assert made.configuration["hnsw"]["ef_search"] < SEARCH_EF
    store.upsert("topics", 1, [1], normalise(np.ones((1, 4), dtype=np.float32)))
    assert client.get_collection(name).configuration["hnsw"]["ef_search"] == SEARCH_EF
    assert client.get_collection(name).configuration["hnsw"]["space"] == "cosine"
