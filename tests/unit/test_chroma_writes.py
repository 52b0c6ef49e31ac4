"""The log of writes to a local Chroma directory: a store reopens on others' writes only."""

from __future__ import annotations

from pathlib import Path

from stores.chroma_clients import ChromaWrites


def test_a_store_sees_other_stores_writes_and_not_its_own(tmp_path: Path):
    store, other = ChromaWrites(tmp_path), ChromaWrites(tmp_path)
    store.opening()
    assert not store.others_wrote(), "nothing written yet"
    store.wrote()
    store.wrote()
    assert not store.others_wrote(), "its own writes"

    other.wrote()
    store.wrote()
    assert store.others_wrote(), "another store wrote, though this one wrote after it"
    assert not store.others_wrote(), "seen once"


def test_writes_before_the_store_was_opened_are_read_with_it(tmp_path: Path):
    ChromaWrites(tmp_path).wrote()
    store = ChromaWrites(tmp_path)
    store.opening()
    assert not store.others_wrote()
