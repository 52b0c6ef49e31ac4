"""Full-text search on SQLite reads through a connection of its own per thread, so a
search's full-text queries run beside one another and beside a writer (issue 15,
retrieval latency): real SQLite files in WAL mode."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stores.relational import RelationalStore
from tests.support.messages import new_messages

pytestmark = pytest.mark.timeout(60)


def store_with_topics(path: Path) -> RelationalStore:
    store = RelationalStore(path)
    for user_id, summary in ((1, "Mom's birthday dinner at Pushkin"), (2, "Dad's birthday gift")):
        rows = store.messages.add(user_id, new_messages([summary, "sounds good"]))
        store.topics.save(user_id, [(summary, [row["id"] for row in rows])])
    return store


def test_a_search_goes_on_while_another_thread_writes(tmp_path: Path) -> None:
    """A transaction holds the shared connection; a search from another thread still
    answers from what was committed, without waiting for the transaction to end."""
    store = store_with_topics(tmp_path / "topica.sqlite3")
    inside, release = threading.Event(), threading.Event()

    def long_write() -> None:
        with store.db.transaction() as db:
            db.execute("UPDATE topics SET summary = 'renamed' WHERE user_id = 1")
            inside.set()
            release.wait(30)

    with ThreadPoolExecutor(max_workers=2) as pool:
        writer = pool.submit(long_write)
        assert inside.wait(10)
        search = pool.submit(store.topics.search, 1, "birthday", 10)
        try:
            found = search.result(timeout=10)  # before the write ends
        finally:
            release.set()
        writer.result(timeout=10)

    assert [topic_id for topic_id, _ in found] == [1]  # the committed summary, user 1's only
    assert store.topics.search(1, "birthday", 10) == []  # the write has landed since
    assert [i for i, _ in store.topics.search(1, "renamed", 10)] == [1]
    store.db.close()


def test_inside_a_transaction_a_search_sees_its_own_writes(tmp_path: Path) -> None:
    store = store_with_topics(tmp_path / "topica.sqlite3")
    with store.db.transaction() as db:
        db.execute("UPDATE topics SET summary = 'anniversary' WHERE user_id = 1")
        assert [i for i, _ in store.topics.search(1, "anniversary", 10)] == [1]
    store.db.close()


def test_each_thread_reads_through_its_own_connection_and_close_ends_them(
    tmp_path: Path,
) -> None:
    store = store_with_topics(tmp_path / "topica.sqlite3")
    readers: list[object] = []

    def search(user_id: int) -> list[tuple[int, float]]:
        found = store.topics.search(user_id, "birthday", 10)
        readers.append(store.db._readers.connection)
        return found

    with ThreadPoolExecutor(max_workers=2) as pool:
        barrier = threading.Barrier(2)
        first = pool.submit(lambda: (barrier.wait(5), search(1))[1])
        second = pool.submit(lambda: (barrier.wait(5), search(2))[1])
        assert [i for i, _ in first.result(10)] == [1]
        assert [i for i, _ in second.result(10)] == [2]

    assert len({id(reader) for reader in readers}) == 2
    assert all(reader is not store.db._db for reader in readers)
    store.db.close()
    for reader in readers:
        with pytest.raises(Exception, match="closed"):
            reader.execute("SELECT 1")


def test_an_in_memory_database_searches_on_its_one_connection() -> None:
    store = store_with_topics(Path(":memory:"))
    assert [i for i, _ in store.topics.search(2, "birthday", 10)] == [2]
    assert getattr(store.db._readers, "connection", None) is None
    store.db.close()


def test_a_data_directory_named_like_a_uri_is_read_as_a_path(tmp_path: Path) -> None:
    """The readers open the file by URI: `?`, `#` and `%` in its path are the path's."""
    store = store_with_topics(tmp_path / "odd?dir#1%20" / "topica.sqlite3")
    with ThreadPoolExecutor(max_workers=1) as pool:
        found = pool.submit(store.topics.search, 1, "birthday", 10).result(10)
    assert [i for i, _ in found] == [1]
    store.db.close()


def test_a_closed_store_opens_no_reader(tmp_path: Path) -> None:
    store = store_with_topics(tmp_path / "topica.sqlite3")
    store.db.close()
    with pytest.raises(Exception, match="closed"):
        store.topics.search(1, "birthday", 10)
    assert store.db._reader_connections == []
