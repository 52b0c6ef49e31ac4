"""A turn's deepest vector list is the exact nearest records, the same in every process."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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


def made_before(client) -> tuple[str, Any]:
    """User 1's topics collection as an earlier version made it: searched Chroma's default
    width."""
    name = VectorStore(lambda: client, "test-embedder").collection_name("topics", 1)
    return name, client.create_collection(
        name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )


def test_a_collection_made_before_is_searched_as_wide(tmp_path: Path, make_settings):
    client = build_chroma_client(make_settings(tmp_path))
    store = VectorStore(lambda: client, "test-embedder")
    name, made = made_before(client)
    assert made.configuration["hnsw"]["ef_search"] < SEARCH_EF
    store.upsert("topics", 1, [1], normalise(np.ones((1, 4), dtype=np.float32)))
    assert client.get_collection(name).configuration["hnsw"]["ef_search"] == SEARCH_EF
    assert client.get_collection(name).configuration["hnsw"]["space"] == "cosine"


def test_a_collection_another_process_holds_locked_is_searched_and_widened_later(
    tmp_path: Path, make_settings
):
    settings = make_settings(tmp_path)
    client = build_chroma_client(settings)
    name, made = made_before(client)
    made.add(
        ids=["1"],
        embeddings=normalise(np.ones((1, 4), dtype=np.float32)),
        metadatas=[{"user_id": 1}],
    )
    # Another process writing to the store (`topica ingest` beside a bot) holds it locked
    # while this one opens the collection: Chroma's query waits for the lock, the widening
    # (a write that fails at once) is left to a later open.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(settings.chroma_path / "chroma.sqlite3")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    store = VectorStore(lambda: client, "test-embedder")
    with ThreadPoolExecutor(1) as pool:
        found = pool.submit(store.query, "topics", 1, np.ones(4, dtype=np.float32), 5)
        time.sleep(2)  # the open is done, the query waits on the lock
        assert client.get_collection(name).configuration["hnsw"]["ef_search"] < SEARCH_EF
        holder.communicate("", timeout=30)
        assert [record_id for record_id, _ in found.result(timeout=30)] == [1]
    assert VectorStore(lambda: client, "test-embedder").count("topics", 1) == 1
    assert client.get_collection(name).configuration["hnsw"]["ef_search"] == SEARCH_EF


HOLD_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
connection.execute("ROLLBACK")
"""
"""Holds a write lock on a SQLite file until its standard input closes."""
