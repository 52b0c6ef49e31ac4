"""Stored conversations an evaluation reuses (`eval locomo|beam --ingests DIR`).

Storing and archiving a conversation (the memory graph) is a large part of an
evaluation's time (about half of a BEAM run), and none of what the ranking work
changes. With a folder of ingests, each conversation is stored in its own data
directory there, with a manifest of what made it: the conversation's messages, the
embedder, the settings and the source of the code that ingestion runs
(`INGEST_SOURCES`). A later run reuses the directory when all of them are the same,
and stores the conversation afresh (replacing it) when any differs, so a stale memory
is never scored. Only the embedded deployment's stores (SQLite and persistent Chroma,
both in the data directory) can be kept this way; one run at a time holds the folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bench.locomo import Conversation
from core.settings import Settings

REPO = Path(__file__).resolve().parents[1]
INGEST_SOURCES = ("app", "core", "graphs", "nodes/memory", "nodes/shared", "prompts", "stores")
"""The code storing and archiving runs (`app.memory`'s imports and what they import):
any change under these folders stores every conversation afresh. The response nodes,
which the ranking work changes, are not among them."""
MANIFEST = "ingest.json"
LOCK = ".lock"
PATHS = frozenset({"data_dir", "cache_dir", "database_schema"})
"""Settings that say where things are kept, not how a conversation is stored."""


@cache
def source_digest(root: Path = REPO) -> str:
    """A digest of the code and profiles under `INGEST_SOURCES` (`*.py`, `*.json`)."""
    digest = hashlib.sha256()
    for folder in INGEST_SOURCES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in {".py", ".json"} and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(settings: Settings, embedder: str, conversation: Conversation) -> str:
    """What a stored conversation was made from: its messages, the embedder's name, the
    settings (but where things are kept) and the ingestion code (`source_digest`)."""
    made_of: dict[str, Any] = {
        "code": source_digest(),
        "embedder": embedder,
        "settings": settings.model_dump(mode="json", exclude=set(PATHS)),
        "conversation": conversation.sample_id,
        "messages": conversation.messages,
    }
    return hashlib.sha256(json.dumps(made_of, sort_keys=True, default=str).encode()).hexdigest()


def folder_name(conversation: Conversation) -> str:
    """The conversation's id as a folder name (`100K/1` → `100K_1`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", conversation.sample_id)


def kept_in_data_dir(settings: Settings) -> str | None:
    """Why the settings' stores cannot be kept in an ingest folder (None: they can)."""
    if settings.database_url is not None:
        return "--ingests keeps SQLite stores only: unset TOPICA_DATABASE_URL"
    if settings.chroma_host is not None:
        return "--ingests keeps a persistent Chroma only: unset TOPICA_CHROMA_HOST"
    return None


@dataclass
class Ingests:
    """A folder of stored conversations, one data directory each (`place`)."""

    root: Path

    @contextmanager
    def held(self) -> Iterator[None]:
        """The folder for this run alone (a lock file, released when the run ends or
        dies). Raises ValueError when another run holds it, or when it is a folder of
        something else (not empty, no lock file): a stale conversation there is removed,
        so no other file may be taken for one."""
        if self.root.is_dir() and not (self.root / LOCK).exists() and any(self.root.iterdir()):
            raise ValueError(f"--ingests: {self.root} holds other files; name a new folder")
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / LOCK).open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ValueError(f"--ingests: {self.root} is in use by another run") from None
            yield

    def place(self, conversation: Conversation) -> Path:
        return self.root / folder_name(conversation)

    def stored(self, data_dir: Path, key: str) -> dict[str, Any] | None:
        """The ingest report kept with `data_dir` when it was made from `key`; else None,
        with `data_dir` emptied for the conversation to be stored afresh."""
        try:
            manifest = json.loads((data_dir / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = None
        if isinstance(manifest, dict) and manifest.get("fingerprint") == key:
            return dict(manifest["ingest"])
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
        return None

    def keep(self, data_dir: Path, key: str, report: dict[str, Any]) -> None:
        """Marks `data_dir` complete: written last, so an interrupted store is redone."""
        manifest = {"fingerprint": key, "ingest": report}
        (data_dir / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
