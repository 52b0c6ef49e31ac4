"""Chat histories from other apps become memory: people and conversation titles first,
then the messages through the same path as a saved session (stored all or nothing,
indexed, archived at once).

A failed import stores no message of it; running it again resumes: what was stored is
skipped by its namespaced id and what is unarchived is archived.
"""

from __future__ import annotations

import asyncio
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.memory import ingest
from core.deps import Deps
from core.errors import ExportFormatError
from core.progress import ProgressBoard
from core.records import PersonRow
from stores.exports.history import ImportedHistory, Person, open_export


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
    await asyncio.to_thread(deps.store.sessions.set_titles, user_id, history.titles())
    summary = history.summary() | {"people_added": people}
    report = await ingest(
        deps, history.in_time_order(), user_id, checkpointer=checkpointer, progress=progress
    )
    return report | {"import": summary}


EXPORT_FILES = {"result.json": "telegram", "conversations.json": "chatgpt"}


def read_export(path: Path, max_bytes: int) -> ImportedHistory:
    """A Telegram or ChatGPT export by its file's name, or a zip by the file it holds."""
    from stores.exports.chatgpt import read_chatgpt
    from stores.exports.telegram import read_telegram

    kinds = [EXPORT_FILES[path.name.lower()]] if path.name.lower() in EXPORT_FILES else []
    if not kinds and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            held = {PurePosixPath(name).name for name in archive.namelist()}
        kinds = [kind for name, kind in EXPORT_FILES.items() if name in held]
    if not kinds:
        raise ExportFormatError(f"{path.name}: not a Telegram or ChatGPT export")
    name = next(name for name, kind in EXPORT_FILES.items() if kind == kinds[0])
    reader = read_telegram if kinds[0] == "telegram" else read_chatgpt
    with open_export(path, (name,), max_bytes) as stream:
        return reader(stream)
