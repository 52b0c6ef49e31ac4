"""What only the PostgreSQL store has: migrations from many processes at once, BM25 over
`tsvector` that scores like FTS5, the memory claims of replicas and their leases, the
per-chat advisory lock, and `topica copy` from a SQLite deployment. (Every other store
test runs on both engines through the `store_engine` fixture.)"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.copying import TABLES, copy_store
from app.memory import archive_user
from app.tasks import add_task, set_user_timezone
from bench.locomo import load_conversations
from cli.main import main
from core.errors import StoreError
from core.ports import Embedder
from stores.locks import AdvisoryChatLock, ClaimRunLock
from stores.relational import RelationalStore
from stores.relational.postgres import PostgresDatabase
from tests.support.messages import new_messages
from tests.support.paths import ROOT
from tests.support.services import local_deps

pytestmark = pytest.mark.stores("postgres")

DEMO = ROOT / "graphs" / "examples" / "demo_session.jsonl"
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"

OPEN_STORE = (
    "import os, sys; from stores.relational.postgres import PostgresDatabase; "
    "db = PostgresDatabase(os.environ['TOPICA_DATABASE_URL'], sys.argv[1]); "
    "print(db.schema_version); db.close()"
)


def database(schema: str | None = None) -> PostgresDatabase:
    return PostgresDatabase(
        os.environ["TOPICA_DATABASE_URL"], schema or os.environ["TOPICA_DATABASE_SCHEMA"]
    )


def test_replicas_starting_at_once_migrate_once(store_engine: str) -> None:
    schema = os.environ["TOPICA_DATABASE_SCHEMA"] + "_race"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_STORE, schema],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0] * 6, results
    db = database(schema)
    try:
        assert {out.strip() for out, _ in results} == {str(db.schema_version)}
        applied = db.rows("SELECT version FROM schema_migrations ORDER BY version")
        assert [row[0] for row in applied] == list(range(1, db.schema_version + 1))
    finally:
        db.close()


MEMORY = [
    "Мама любит пионы, на юбилей закажем букет в «Флоре».",
    "The vet said Marzipan needs the renal diet for his kidneys.",
    "Купили кроссовки для полумарафона, размер 43.",
    "Marzipan refuses the renal food, he only eats the old one.",
    "Café «Élan» on the corner has the best croissants.",
]


def stored_pair(tmp_path: Path) -> tuple[RelationalStore, RelationalStore, list[int], list[int]]:
    sqlite = RelationalStore(tmp_path / "topica.sqlite3")
    postgres = RelationalStore(database())
    rows = new_messages([("user", text) for text in MEMORY])
    return (
        sqlite,
        postgres,
        [row["id"] for row in sqlite.messages.add(1, rows)],
        [row["id"] for row in postgres.messages.add(1, rows)],
    )


@pytest.mark.parametrize(
    "query",
    [
        "what did the vet say about the renal diet",
        "Какие цветы любит мама?",  # "цветы" no, "мама" ≈ "Мама" by prefix
        "юбилея мамы",  # another case of the same words
        "croissants at Cafe Elan",  # diacritics ignored, as FTS5's remove_diacritics
        "кроссовки полумарафон",
    ],
)
def test_full_text_ranks_and_scores_as_sqlite_does(
    store_engine: str, tmp_path: Path, query: str
) -> None:
    sqlite, postgres, sqlite_ids, postgres_ids = stored_pair(tmp_path)
    try:
        position = {record_id: n for n, record_id in enumerate(sqlite_ids)}
        expected = [(position[i], s) for i, s in sqlite.messages.search(1, query, 10)]
        position = {record_id: n for n, record_id in enumerate(postgres_ids)}
        found = [(position[i], s) for i, s in postgres.messages.search(1, query, 10)]
        assert expected, "the query matches something"
        assert [n for n, _ in found] == [n for n, _ in expected]
        # One user alone in each store: the same statistics and formula, so the same BM25
        # up to the tokenizers' counts of words in a text ("Marzipan's", "«Флоре»").
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=0.03)
    finally:
        sqlite.close()
        postgres.close()


def test_full_text_statistics_are_the_users_own(store_engine: str) -> None:
    store = RelationalStore(database())
    try:
        store.messages.add(1, new_messages([("user", text) for text in MEMORY]))
        alone = store.messages.search(1, "renal diet", 10)
        store.messages.add(2, new_messages([("user", "renal renal diet")] * 40, prefix="r"))
        assert store.messages.search(1, "renal diet", 10) == alone
        assert all(store.messages.by_ids(1, [i]) for i, _ in alone)
        assert store.messages.search(3, "renal diet", 10) == []
    finally:
        store.close()


def test_ids_past_64_bits_match_nothing(store_engine: str) -> None:
    store = RelationalStore(database())
    try:
        store.messages.add(1, new_messages([("user", "hello")]))
        assert store.messages.by_ids(1, [2**63, 10**23]) == []
        assert store.topics.by_ids(1, [2**64]) == []
        with pytest.raises(StoreError):
            store.facts.update(1, 2**63, content="x")
    finally:
        store.close()


def test_a_claim_excludes_other_replicas_until_released_or_expired(store_engine: str) -> None:
    db = database()
    claims = ClaimRunLock(db, lease_s=1.0)
    try:
        assert claims.claim(7, "replica-a")
        assert not claims.claim(7, "replica-b"), "held by a"
        assert claims.claim(7, "replica-a"), "a renews its own claim"
        assert claims.holder(7) == "replica-a"
        claims.release(7, "replica-a")
        assert claims.claim(7, "replica-b"), "released: b takes it"
        time.sleep(1.3)  # b dies without releasing: its lease runs out
        assert claims.holder(7) is None
        assert claims.claim(7, "replica-c")
    finally:
        db.close()


async def test_memory_runs_of_one_user_never_overlap_across_replicas(store_engine: str) -> None:
    one, two = database(), database()
    running: list[str] = []
    overlaps = 0

    async def run(lock: ClaimRunLock, name: str) -> None:
        nonlocal overlaps
        async with lock.hold(5):
            running.append(name)
            overlaps += len(running) > 1
            await asyncio.sleep(0.2)
            running.remove(name)

    try:
        locks = [ClaimRunLock(one, lease_s=2.0), ClaimRunLock(two, lease_s=2.0)]
        await asyncio.gather(*(run(locks[n % 2], f"run{n}") for n in range(6)))
        assert overlaps == 0
    finally:
        one.close()
        two.close()


async def test_the_chat_lock_orders_turns_across_replicas(store_engine: str) -> None:
    one, two = database(), database()
    locks = [AdvisoryChatLock(one), AdvisoryChatLock(two)]
    inside: list[int] = []
    overlaps = 0

    async def turn(n: int, chat: int) -> None:
        nonlocal overlaps
        async with locks[n % 2].hold(chat):
            inside.append(chat)
            overlaps += inside.count(chat) > 1
            await asyncio.sleep(0.05)
            inside.remove(chat)

    try:
        await asyncio.gather(*(turn(n, 100 + n % 3) for n in range(18)))
        assert overlaps == 0
        killed = database()
        holder = killed.connect()  # a replica holding chat 9's lock, then killed
        holder.execute(
            "SELECT pg_advisory_lock(hashtextextended(%s, 0))", (f"{killed.schema}:chat:9",)
        )
        waiting = asyncio.create_task(turn(0, 9))
        await asyncio.sleep(0.3)
        assert not waiting.done(), "another replica's turn holds the chat"
        holder.close()  # the connection dies with the replica: the lock goes with it
        await asyncio.wait_for(waiting, 5)
        killed.close()
    finally:
        for lock in locks:
            lock.close()
        one.close()
        two.close()


def run_cli(*args: str) -> str:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        assert main(list(args)) == 0, args
    return output.getvalue()


@contextlib.contextmanager
def on_sqlite() -> Iterator[None]:
    """The test's environment without its PostgreSQL store (a SQLite deployment)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TOPICA_DATABASE_URL")
        patch.delenv("TOPICA_DATABASE_SCHEMA")
        yield


def copy_and_export(source_dir: Path, user: int) -> tuple[dict, dict]:
    """`topica copy` of `source_dir` into the test's schema; each side's export."""
    with on_sqlite():
        before = json.loads(run_cli("export", "--user", str(user), "--data-dir", str(source_dir)))
    url, schema = os.environ["TOPICA_DATABASE_URL"], os.environ["TOPICA_DATABASE_SCHEMA"]
    copied = json.loads(
        run_cli("copy", "--from", str(source_dir), "--to", url, "--schema", schema, "--json")
    )
    assert copied["verified"]
    assert all(table["source"] == table["target"] for table in copied["tables"])
    after = json.loads(run_cli("export", "--user", str(user), "--data-dir", str(source_dir)))
    return before, after


def test_copy_round_trips_the_demo_session(store_engine: str, tmp_path: Path) -> None:
    source_dir = tmp_path / "sqlite-deployment"
    with on_sqlite():
        run_cli("ingest", str(DEMO), "--user", "7", "--data-dir", str(source_dir))
        assert (source_dir / "topica.sqlite3").is_file()
    before, after = copy_and_export(source_dir, 7)
    assert len(before["messages"]) == 196 and before["topics"]
    assert after == before


def test_copy_round_trips_a_locomo_conversation(
    store_engine: str, tmp_path: Path, embedder: Embedder
) -> None:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo is not beside the project ({LOCOMO})")
    (conversation,) = load_conversations(LOCOMO, only={"conv-26"})
    source_dir = tmp_path / "sqlite-deployment"
    with on_sqlite():
        deps = local_deps(source_dir, embedder, database_url=None)
        try:
            deps.indexer.store_messages(3, conversation.messages)
            asyncio.run(archive_user(deps, 3, archive_all=True))
            deps.store.facts.add(3, "Caroline is a counsellor", "identity", 70)
            fact = deps.store.facts.add(3, "Melanie paints", "context", 40)
            deps.store.facts.update(3, fact["id"], content="Melanie paints sunsets")
            add_task(deps, 3, "every Monday at 9:00", "weekly review")
            set_user_timezone(deps, 3, "Lisbon")
        finally:
            deps.close()
    before, after = copy_and_export(source_dir, 3)
    assert len(before["messages"]) == len(conversation.messages) and len(before["topics"]) > 10
    assert [task["request"] for task in before["tasks"]] == ["weekly review"]
    assert after == before
    store = RelationalStore(database())
    try:  # the copy goes on: new rows get new ids after the copied ones
        (added,) = store.messages.add(3, new_messages([("user", "after the move")]))
        assert added["id"] > max(message["id"] for message in before["messages"])
    finally:
        store.close()


def test_copy_refuses_a_target_that_is_not_empty(store_engine: str, tmp_path: Path) -> None:
    source = RelationalStore(tmp_path / "topica.sqlite3")
    target = RelationalStore(database())
    try:
        source.messages.add(1, new_messages([("user", "a")]))
        target.messages.add(2, new_messages([("user", "b")]))
        with pytest.raises(StoreError, match="not empty"):
            copy_store(source, target)
    finally:
        source.close()
        target.close()


def test_a_copy_stopped_part_way_leaves_nothing_and_runs_again(
    store_engine: str, tmp_path: Path
) -> None:
    source = RelationalStore(tmp_path / "topica.sqlite3")
    target = RelationalStore(database())

    def stop_at_messages(table: str, _rows: int) -> None:
        if table == "messages":
            raise KeyboardInterrupt  # as a Ctrl-C part-way, after users and topics

    try:
        source.messages.add(1, new_messages([("user", "a"), ("assistant", "b")]))
        with pytest.raises(KeyboardInterrupt):
            copy_store(source, target, progress=stop_at_messages)
        assert all(_rows(target, table) == 0 for table in ("users", "topics", "messages"))
        copied = copy_store(source, target)
        assert all(table.verified for table in copied)
        assert _rows(target, "messages") == 2
    finally:
        source.close()
        target.close()


def _rows(store: RelationalStore, table: str) -> int:
    return store.db.rows(f"SELECT count(*) FROM {table}")[0][0]


def test_a_schema_name_that_is_not_one_is_refused(store_engine: str) -> None:
    with pytest.raises(StoreError, match="not a schema name"):
        database("public; DROP TABLE users; --")


def test_replicas_storing_one_users_messages_at_once_number_them_all(store_engine: str) -> None:
    """Quick messages of one chat reaching two replicas at once: each stored, numbered
    without a gap or a clash (the user's row lock), none refused."""
    stores = [RelationalStore(database()), RelationalStore(database())]
    stores[0].messages.add(1, new_messages([("user", "first")], prefix="first"))

    def send(n: int) -> None:
        for i in range(25):
            stores[n].messages.add(1, new_messages([("user", f"{n}-{i}")], prefix=f"r{n}-{i}-"))

    try:
        threads = [threading.Thread(target=send, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        seqs = [message["seq"] for message in stores[0].messages.all_of(1)]
        assert seqs == list(range(1, 52))
    finally:
        for store in stores:
            store.close()


def test_copy_knows_every_table_of_the_store(tmp_path: Path) -> None:
    store = RelationalStore(tmp_path / "topica.sqlite3")
    try:
        tables = {
            name
            for (name,) in store.db.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_") and "_fts" not in name
        }
    finally:
        store.close()
    assert tables == set(TABLES)
