"""Chat histories from other apps become memory: people first, then the messages through
the same path as a saved session (stored all or nothing, indexed, archived at once).

A failed import stores no message of it; running it again resumes: what was stored is
skipped by its namespaced id and what is unarchived is archived.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.memory import ingest
from core.deps import Deps
from core.progress import ProgressBoard
from core.records import PersonRow
from stores.exports.history import ImportedHistory, Person


def remember_people(deps: Deps, user_id: int, people: list[Person]) -> int:
    """Add the people an export names, matching anyone already known by a name or alias;
    returns how many are new."""
    known = deps.store.people.all_of(user_id)
    added = 0
    for person in people:
        names = {name.casefold() for name in person.names}
        match = next((row for row in known if names & _names_of(row)), None)
        if match is not None:
            deps.store.people.update(user_id, match["id"], aliases=person.names)
        elif person.names:
            known.append(deps.store.people.add(user_id, person.names[0], person.names[1:]))
            added += 1
    if added:
        deps.indexer.index(user_id, "people")
    return added


def _names_of(row: PersonRow) -> set[str]:
    return {name.casefold() for name in [row["name"], *row["aliases"]]}


async def import_history(
    deps: Deps,
    history: ImportedHistory,
    user_id: int,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    progress: ProgressBoard | None = None,
) -> dict[str, Any]:
    """Store and archive an export's messages for `user_id`; `ingest`'s report plus
    `import`: the chats, dates, people and what was skipped by reason."""
    people = await asyncio.to_thread(remember_people, deps, user_id, list(history.people.values()))
    summary = history.summary() | {"people_added": people}
    report = await ingest(
        deps, history.in_time_order(), user_id, checkpointer=checkpointer, progress=progress
    )
    return report | {"import": summary}
