"""People from the user's life."""

from __future__ import annotations

import json
from collections.abc import Sequence

from core.errors import StoreError
from core.records import PersonRow, now_iso
from stores.relational.database import Repository
from stores.relational.rows import ensure_user, mark_pending, person_row


class PeopleRepository(Repository):
    def add(
        self,
        user_id: int,
        name: str,
        aliases: Sequence[str] = (),
        username: str | None = None,
        circle: str | None = None,
        bio: str | None = None,
    ) -> PersonRow:
        if not name.strip():
            raise StoreError("a person needs a name")
        stamp = now_iso()
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            person_id = db.execute(
                "INSERT INTO people (user_id, name, aliases, username, circle, bio, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    user_id,
                    name.strip(),
                    json.dumps(sorted(set(aliases)), ensure_ascii=False),
                    username,
                    circle,
                    bio,
                    stamp,
                    stamp,
                ),
            ).fetchone()[0]
            mark_pending(db, user_id, "people", [person_id])
        return self.get(user_id, person_id)

    def update(
        self,
        user_id: int,
        person_id: int,
        *,
        name: str | None = None,
        aliases: Sequence[str] | None = None,
        username: str | None = None,
        circle: str | None = None,
        bio: str | None = None,
    ) -> PersonRow:
        old = self.get(user_id, person_id)
        merged_aliases = sorted(set(old["aliases"]) | set(aliases or ()))
        with self._db.transaction() as db:
            db.execute(
                "UPDATE people SET name = ?, aliases = ?, username = ?, circle = ?, bio = ?, "
                "updated_at = ? WHERE user_id = ? AND id = ?",
                (
                    (name or old["name"]).strip(),
                    json.dumps(merged_aliases, ensure_ascii=False),
                    username if username is not None else old["username"],
                    circle if circle is not None else old["circle"],
                    bio if bio is not None else old["bio"],
                    now_iso(),
                    user_id,
                    person_id,
                ),
            )
            mark_pending(db, user_id, "people", [person_id])
        return self.get(user_id, person_id)

    def merge(self, user_id: int, source_id: int, target_id: int) -> PersonRow:
        """Fold a duplicate person into another: names become aliases, bios joined."""
        source = self.get(user_id, source_id)
        target = self.get(user_id, target_id)
        bios = [bio for bio in (target["bio"], source["bio"]) if bio]
        with self._db.transaction() as db:
            db.execute(
                "UPDATE people SET aliases = ?, username = ?, circle = ?, bio = ?, updated_at = ? "
                "WHERE user_id = ? AND id = ?",
                (
                    json.dumps(
                        sorted(
                            (set(target["aliases"]) | set(source["aliases"]) | {source["name"]})
                            - {target["name"]}
                        ),
                        ensure_ascii=False,
                    ),
                    target["username"] or source["username"],
                    target["circle"] or source["circle"],
                    "\n".join(dict.fromkeys(bios)) or None,
                    now_iso(),
                    user_id,
                    target_id,
                ),
            )
            db.execute("DELETE FROM people WHERE user_id = ? AND id = ?", (user_id, source_id))
            mark_pending(db, user_id, "people", [target_id, source_id])
        return self.get(user_id, target_id)

    def delete(self, user_id: int, person_id: int) -> PersonRow:
        """Forget a person (the user asked for it); their vector goes through the queue."""
        old = self.get(user_id, person_id)
        with self._db.transaction() as db:
            db.execute("DELETE FROM people WHERE user_id = ? AND id = ?", (user_id, person_id))
            mark_pending(db, user_id, "people", [person_id])
        return old

    def get(self, user_id: int, person_id: int) -> PersonRow:
        return person_row(self._db.one_of_user("people", "person", user_id, person_id))

    def all_of(self, user_id: int) -> list[PersonRow]:
        rows = self._db.rows("SELECT * FROM people WHERE user_id = ? ORDER BY id", (user_id,))
        return [person_row(row) for row in rows]

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[PersonRow]:
        return [person_row(row) for row in self._db.by_ids("people", user_id, ids)]

    def owned(self, user_id: int, ids: Sequence[int]) -> set[int]:
        """Those of `ids` that are the user's people."""
        return self._db.owned_ids("people", user_id, ids)
