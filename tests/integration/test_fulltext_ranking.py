"""SQLite full-text search ranks in the index first and checks only the best rows against
the table (`SqliteDatabase.fulltext`, issue 15, retrieval latency): it must find what
checking every match first finds, page on when the check drops the best rows, and still
never return a row that is not the user's. Real SQLite files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from core.records import NewMessage
from stores.relational import RelationalStore
from stores.relational.database import RANKED_PAGE
from tests.support.messages import new_messages

pytestmark = pytest.mark.timeout(60)

WORDS = ("marathon", "knee", "physio", "garden", "roses", "birthday", "dinner", "tickets")


def ranked_both_ways(store: RelationalStore, user_id: int, text: str, limit: int):
    where = "AND r.kind = 'conversation'"
    first = store.db.fulltext("messages", user_id, text, limit, where)
    joined = store.db.fulltext("messages", user_id, text, limit, where, narrow=True)
    return first, joined


def test_ranking_first_finds_what_checking_every_match_first_finds(tmp_path: Path) -> None:
    store = RelationalStore(tmp_path / "topica.sqlite3")
    chance = random.Random(5)
    for user_id in (1, 2):
        texts = [
            " ".join(chance.choices(WORDS, k=chance.randint(2, 12))) + f" filler{n} " + "note " * n
            for n in range(300)
        ]
        store.messages.add(user_id, new_messages(texts, prefix=f"u{user_id}-"))
    try:
        for text in ("marathon knee", "roses", "birthday dinner tickets", "physio garden"):
            for limit in (1, 5, RANKED_PAGE, 120, 400):
                first, joined = ranked_both_ways(store, 1, text, limit)
                assert first == joined, (text, limit)
                assert len(first) == min(limit, len(store.messages.search(1, text, 1000)))
                assert first  # every query matches something
    finally:
        store.close()


def commands(texts: list[str]) -> list[NewMessage]:
    return [NewMessage(**message, kind="command") for message in new_messages(texts, prefix="c")]


def test_rows_the_table_drops_do_not_crowd_out_the_ones_it_keeps(tmp_path: Path) -> None:
    """The best matches are all commands, which are not memory: the index pages on until
    it reaches the conversation."""
    store = RelationalStore(tmp_path / "topica.sqlite3")
    try:
        dropped = store.messages.add(1, commands(["/marathon marathon"] * (RANKED_PAGE * 3)))
        kept = store.messages.add(
            1,
            new_messages(
                [
                    "a marathon in spring",
                    "the marathon route goes past the river and the old bridge",
                    "after the marathon my knee hurt for a week, the physio said rest",
                ]
            ),
        )
        assert {row["kind"] for row in dropped} == {"command"}
        best_match = store.db.fulltext("messages", 1, "marathon", 1)  # no `where`
        assert best_match[0][0] in {row["id"] for row in dropped}

        found = store.messages.search(1, "marathon", 2)
        assert [i for i, _ in found] == [kept[0]["id"], kept[1]["id"]]  # shortest first
        assert [i for i, _ in store.messages.search(1, "marathon", 10)] == [
            row["id"] for row in kept
        ]
        first, joined = ranked_both_ways(store, 1, "marathon", 3)
        assert first == joined
    finally:
        store.close()


def test_a_row_indexed_under_the_user_but_stored_as_anothers_is_never_returned(
    tmp_path: Path,
) -> None:
    """The index is only where the search starts: a row it gives for user 1 that the table
    files under user 2 (a damaged index) is dropped by the check on the table."""
    store = RelationalStore(tmp_path / "topica.sqlite3")
    try:
        mine = store.messages.add(1, new_messages(["my marathon training plan"]))
        theirs = store.messages.add(2, new_messages(["their secret marathon diary"]))
        with store.db.transaction() as db:
            db.execute(
                "INSERT INTO messages_fts(rowid, words) VALUES (?, topica_words(1, ?))",
                (theirs[0]["id"], "marathon marathon marathon"),
            )
        assert [i for i, _ in store.messages.search(1, "marathon", 10)] == [mine[0]["id"]]
        assert [i for i, _ in store.messages.search(2, "marathon", 10)] == [theirs[0]["id"]]
    finally:
        store.close()


def test_a_segment_is_searched_alone(tmp_path: Path) -> None:
    """Auto-RAG searches the current segment only (`narrow`): the best matches of earlier
    segments do not crowd it out."""
    store = RelationalStore(tmp_path / "topica.sqlite3")
    try:
        store.messages.add(1, new_messages(["marathon marathon"] * (RANKED_PAGE * 2)))
        segment = store.sessions.start_new_segment(1)
        now = store.messages.add(1, new_messages(["signed up for a marathon in May"], prefix="now"))
        assert now[0]["segment"] == segment
        found = store.messages.search(1, "marathon", 5, segment=segment)
        assert [i for i, _ in found] == [now[0]["id"]]
    finally:
        store.close()
