"""`topica doctor`: differences between SQLite and the vector index, found and repaired.

Real SQLite and Chroma: an orphan vector (a record deleted while its index entry was
not) and a missing one (a record whose vector was lost) are made by writing to one side
only, then reported by `doctor` and set right by `doctor --repair`."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json

from app.doctor import doctor
from app.memory import archive_user
from cli.main import main
from core.deps import Deps
from tests.support.messages import new_messages

CONVERSATION = [
    "We booked the cabin by the lake for the first week of July.",
    "Nice, is there a boat?",
    "Yes, a small rowing boat and two kayaks.",
    "Then pack the dry bags.",
]


async def broken_index(deps: Deps) -> tuple[int, int, int]:
    """(orphan topic id, missing message id, missing fact id) after breaking the index."""
    deps.indexer.store_messages(1, new_messages(CONVERSATION))
    await archive_user(deps, 1, archive_all=True)
    fact = deps.store.facts.add(1, "Goes to the lake in July", "context", 60)
    deps.indexer.index_all(1)
    orphan = 10_000
    vector = deps.embedder.encode(["a topic deleted long ago"])
    deps.vectors.upsert("topics", 1, [orphan], vector, [{}])
    message = deps.store.messages.all_of(1)[1]["id"]
    deps.vectors.delete("messages", 1, [message])
    deps.vectors.delete("facts", 1, [fact["id"]])
    return orphan, message, fact["id"]


def by_kind(result: dict) -> dict[str, dict]:
    return {report["kind"]: report for report in result["reports"]}


async def test_doctor_reports_orphan_and_missing_vectors_and_repairs_them(deps: Deps):
    orphan, message, fact = await broken_index(deps)

    found = by_kind(await doctor(deps, [1]))
    assert found["topics"]["orphans"] == [orphan] and found["topics"]["missing"] == []
    assert found["messages"]["missing"] == [message] and found["messages"]["orphans"] == []
    assert found["facts"]["missing"] == [fact]
    assert found["people"] == {**found["people"], "missing": [], "orphans": []}

    repaired = await doctor(deps, [1], repair=True)
    assert repaired["consistent"]
    assert {r["kind"]: r["repaired"] for r in repaired["reports"]} == {
        "topics": 1,
        "facts": 1,
        "people": 0,
        "messages": 1,
        "passages": 0,
    }
    assert orphan not in deps.vectors.ids("topics", 1)
    assert message in deps.vectors.ids("messages", 1) and fact in deps.vectors.ids("facts", 1)
    hits = deps.vectors.query("topics", 1, deps.embedder.encode_query("deleted long ago"), 10)
    assert orphan not in {record_id for record_id, _ in hits}
    assert (await doctor(deps, [1]))["consistent"]


def test_doctor_on_the_command_line_reports_then_repairs(deps: Deps):
    orphan, _, _ = asyncio.run(broken_index(deps))
    data_dir = str(deps.settings.data_dir)
    deps.close()

    def run(*args: str) -> tuple[int, str]:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            status = main(["doctor", *args, "--data-dir", data_dir])
        return status, output.getvalue()

    status, text = run("--all", "--json")
    assert status == 0
    found = json.loads(text)
    assert not found["consistent"] and by_kind(found)["topics"]["orphans"] == [orphan]
    status, text = run("--user", "1")
    assert status == 0 and "inconsistent" in text and "orphans" in text
    status, text = run("--user", "1", "--repair", "--json")
    assert status == 0 and json.loads(text)["consistent"]
    status, text = run("--all", "--json")
    assert json.loads(text)["consistent"]
