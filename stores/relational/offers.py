"""Reminders offered for what the user promised or planned ("пришлю отчёт в пятницу").

An offer belongs to one user and to the message the commitment was said in (it goes
when that message goes): the request, the time as the user said it and as read
(`due_at`, UTC; `rule` for a repeating one), the zone it was read in, and its state:
`offered` until the user presses a button, then `accepted` (with the task it created) or
`dismissed`. Nothing is scheduled by an offer itself.

An offer is sent at most once: `claim_unsent` marks it sent with one compare-and-set
`UPDATE` before the send, so with several processes on one database only one sends it;
a send that failed for a passing reason gives it back (`unsend`). Every method that
reads or changes an offer takes the user id and filters on it, except `claim_unsent`,
the sender's one read across users, whose rows name their user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from typing_extensions import TypedDict

from core.errors import StoreError
from core.records import now_iso
from core.text import valid_text
from stores.relational.database import Repository
from stores.relational.rows import ensure_user, holds_message
from stores.relational.tasks import utc_iso

OfferState = Literal["offered", "accepted", "dismissed"]


class OfferRow(TypedDict):
    id: int
    user_id: int
    message_id: int
    request: str
    said_when: str
    due_at: str
    rule: str | None
    timezone: str
    state: OfferState
    sent_at: str | None
    task_id: int | None
    created_at: str


_COLUMNS = ", ".join(OfferRow.__annotations__)


def _offer(row: Any) -> OfferRow:
    return OfferRow(**{key: row[key] for key in OfferRow.__annotations__})  # type: ignore[typeddict-item]


class OfferRepository(Repository):
    def add(
        self,
        user_id: int,
        message_id: int,
        request: str,
        said_when: str,
        due_at: datetime,
        timezone: str,
        rule: str | None = None,
    ) -> OfferRow | None:
        """A new offer for the user's message; None when that message already has an
        offer of the same request (archiving the same words twice offers once)."""
        if not request.strip():
            raise StoreError("an offer needs a request")
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            if not holds_message(db, user_id, message_id):
                raise StoreError(f"user has no message {message_id}")
            row = db.execute(
                "INSERT INTO reminder_offers (user_id, message_id, request, said_when, due_at, "
                "rule, timezone, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                f"ON CONFLICT DO NOTHING RETURNING {_COLUMNS}",
                (
                    user_id,
                    message_id,
                    valid_text(request.strip()),
                    valid_text(said_when.strip()),
                    utc_iso(due_at),
                    rule,
                    timezone,
                    now_iso(),
                ),
            ).fetchone()
        return _offer(row) if row else None

    def get(self, user_id: int, offer_id: int) -> OfferRow | None:
        rows = self._db.rows(
            f"SELECT {_COLUMNS} FROM reminder_offers WHERE user_id = ? AND id = ?",
            (user_id, offer_id),
        )
        return _offer(rows[0]) if rows else None

    def of_user(self, user_id: int) -> list[OfferRow]:
        """The user's offers, oldest first."""
        rows = self._db.rows(
            f"SELECT {_COLUMNS} FROM reminder_offers WHERE user_id = ? ORDER BY id", (user_id,)
        )
        return [_offer(row) for row in rows]

    def claim_unsent(self, now: datetime, limit: int) -> list[OfferRow]:
        """Mark up to `limit` unsent offers whose time is still ahead as sent now, and
        return them (each one to a single caller)."""
        at = utc_iso(now)
        candidates = self._db.rows(
            "SELECT id, user_id FROM reminder_offers WHERE sent_at IS NULL AND due_at > ? "
            "AND state = 'offered' ORDER BY id LIMIT ?",
            (at, limit),
        )
        claimed = self._db.claim_each(
            candidates,
            "UPDATE reminder_offers SET sent_at = ? "
            f"WHERE user_id = ? AND id = ? AND sent_at IS NULL RETURNING {_COLUMNS}",
            lambda candidate: (at, candidate["user_id"], candidate["id"]),
        )
        return [_offer(row) for _, row in claimed]

    def unsend(self, user_id: int, offer_id: int) -> None:
        """An offer whose send failed for a passing reason: sent again by a later pass."""
        with self._db.transaction() as db:
            db.execute(
                "UPDATE reminder_offers SET sent_at = NULL "
                "WHERE user_id = ? AND id = ? AND state = 'offered'",
                (user_id, offer_id),
            )

    def answer(
        self, user_id: int, offer_id: int, state: OfferState, task_id: int | None = None
    ) -> OfferRow | None:
        """Accept (with the task it created) or dismiss one of the user's offers that is
        still open; None when the user has no such open offer."""
        if state not in ("accepted", "dismissed"):
            raise StoreError(f"an offer is answered accepted or dismissed, not {state!r}")
        with self._db.transaction() as db:
            row = db.execute(
                "UPDATE reminder_offers SET state = ?, task_id = ? "
                f"WHERE user_id = ? AND id = ? AND state = 'offered' RETURNING {_COLUMNS}",
                (state, task_id, user_id, offer_id),
            ).fetchone()
        return _offer(row) if row else None

    def forget(self, user_id: int) -> int:
        """Delete all of the user's offers; how many there were."""
        with self._db.transaction() as db:
            return db.execute("DELETE FROM reminder_offers WHERE user_id = ?", (user_id,)).rowcount
