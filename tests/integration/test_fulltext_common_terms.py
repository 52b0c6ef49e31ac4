"""Common terms in full-text search (`stores.fulltext.COMMON_MATCHES`, issue 15, retrieval
latency): a term matching that many of the user's rows or more scores only the rows that
also hold a rarer term of the query, with their whole BM25 score, unless those are fewer
than a page. Both engines, real stores, with more rows than the threshold."""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.fulltext import COMMON_MATCHES, user_phrases
from stores.relational import RelationalStore
from stores.relational.database import RANKED_PAGE
from stores.relational.fts5_ranking import rank_plan
from tests.support.messages import new_messages

pytestmark = pytest.mark.timeout(120)

WEATHER_ONLY = COMMON_MATCHES + 200
MARATHON_ONLY = COMMON_MATCHES - 200


def corpus() -> dict[str, list[str]]:
    """User 1's rows by what they hold. Lengths vary so that scores differ. "marathon" is
    just under the threshold, so its idf is near that of "weather": the short rows that
    repeat "weather" outscore the long rows that hold "marathon" once. The rows holding
    neither keep both words in under half of the user's rows (PostgreSQL's BM25 counts
    the user's rows alone, and a word in more than half of them weighs nothing)."""
    return {
        "weather": [
            " ".join(["weather"] * (1 + n % 3) + [f"note{n}"] + ["filler"] * (n % 7))
            for n in range(WEATHER_ONLY)
        ],
        "marathon weather": [
            " ".join(["marathon", "weather"] + ["filler"] * (2 + n % 11)) for n in range(30)
        ],
        "marathon": [
            " ".join(["marathon"] + ["filler"] * (8 + n % 13) + [f"run{n}"])
            for n in range(MARATHON_ONLY)
        ],
        "physio": [" ".join(["physio"] + ["filler"] * (n % 5)) for n in range(10)],
        "neither": [f"garden roses {n}" for n in range(COMMON_MATCHES)],
    }


@pytest.fixture
def filled(relational_store: RelationalStore) -> tuple[RelationalStore, dict[str, set[int]]]:
    """User 1's corpus, and user 2 holding more "marathon" rows than the threshold."""
    ids = {}
    for name, texts in corpus().items():
        rows = relational_store.messages.add(1, new_messages(texts, prefix=f"{name}-"))
        ids[name] = {row["id"] for row in rows}
    theirs = [f"marathon diary {n}" for n in range(COMMON_MATCHES + 100)]
    relational_store.messages.add(2, new_messages(theirs, prefix="theirs-"))
    return relational_store, ids


def every_match(store: RelationalStore, user_id: int, text: str) -> list[tuple[int, float]]:
    """The whole query's BM25 ranking of every match (a `narrow` search ranks them all)."""
    return store.db.fulltext("messages", user_id, text, 10_000, narrow=True)


def test_rows_holding_only_a_common_term_make_way_for_rows_holding_a_rarer_one(
    filled: tuple[RelationalStore, dict[str, set[int]]],
) -> None:
    store, ids = filled
    marathon = ids["marathon"] | ids["marathon weather"]
    whole = every_match(store, 1, "marathon weather")
    assert len(marathon) >= RANKED_PAGE  # the rarer term fills a page
    assert {i for i, _ in whole[:RANKED_PAGE]} & ids["weather"]  # the rule changes something

    found = store.messages.search(1, "marathon weather", RANKED_PAGE)

    expected = [hit for hit in whole if hit[0] in marathon][:RANKED_PAGE]
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected])
    both = [score for i, score in found if i in ids["marathon weather"]]
    alone = [score for i, score in found if i in ids["marathon"]]
    assert min(both) > max(alone)  # the common term still adds to the score of its rows


def test_when_the_rarer_terms_hold_fewer_rows_than_a_page_every_match_ranks(
    filled: tuple[RelationalStore, dict[str, set[int]]],
) -> None:
    store, ids = filled
    whole = every_match(store, 1, "physio weather")
    found = store.messages.search(1, "physio weather", RANKED_PAGE)
    assert [i for i, _ in found] == [i for i, _ in whole[:RANKED_PAGE]]
    assert [s for _, s in found] == pytest.approx([s for _, s in whole[:RANKED_PAGE]])
    assert ids["physio"] <= {i for i, _ in found}
    assert {i for i, _ in found} & ids["weather"]  # the common term's rows fill the page


@pytest.mark.parametrize("text", ["weather", "weather forecast", "marathon physio"])
def test_a_query_with_no_common_and_rare_terms_together_ranks_every_match(
    filled: tuple[RelationalStore, dict[str, set[int]]], text: str
) -> None:
    store, _ = filled
    whole = every_match(store, 1, text)
    found = store.messages.search(1, text, RANKED_PAGE)
    assert found and [i for i, _ in found] == [i for i, _ in whole[:RANKED_PAGE]]


@pytest.mark.stores("sqlite")
def test_a_term_is_common_by_the_users_own_rows(tmp_path: Path) -> None:
    """User 2's many "marathon" rows leave the word rare for user 1, and user 1's many
    "weather" rows leave it rare for user 2."""
    store = RelationalStore(tmp_path / "topica.sqlite3")
    try:
        store.messages.add(1, new_messages(corpus()["weather"], prefix="w-"))
        store.messages.add(1, new_messages(["marathon in May"] * 60, prefix="m-"))
        theirs = [f"marathon diary {n}" for n in range(COMMON_MATCHES + 100)]
        store.messages.add(2, new_messages(theirs + ["weather"] * 60, prefix="theirs-"))
        weather, marathon = user_phrases(1, "weather marathon")
        mine = rank_plan(store.db._read, "messages_fts", 1, "weather marathon")
        assert mine is not None and (mine.common, mine.rare) == ((weather,), (marathon,))
        weather, marathon = user_phrases(2, "weather marathon")
        their = rank_plan(store.db._read, "messages_fts", 2, "weather marathon")
        assert their is not None and (their.common, their.rare) == ((marathon,), (weather,))
        assert rank_plan(store.db._read, "messages_fts", 3, "weather marathon") is not None
        assert store.messages.search(3, "weather marathon", 10) == []
    finally:
        store.close()
