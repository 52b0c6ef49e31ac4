"""Reminders offered for the user's commitments, shared by every front end: take the
offers to send, and answer one (accept: the reminder is scheduled at the time the offer
named; dismiss: nothing is).

Every call that answers an offer takes the user id; another user's offer is "no such
offer", and an offer is answered once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.records import parse_timestamp
from core.when import next_run, zone

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.offers import OfferRow
    from stores.relational.tasks import TaskRow

OFFERS_PER_PASS = 50


class OfferError(ValueError):
    """An offer the user does not have open (another user's, already answered, gone)."""


class OfferPassed(OfferError):
    """An offer of a single time that is already past: nothing to schedule."""


def offers_to_send(deps: Deps, now: datetime | None = None) -> list[OfferRow]:
    """The offers not sent yet whose time is still ahead, each marked sent (taken by this
    caller only)."""
    return deps.store.offers.claim_unsent(now or datetime.now(UTC), OFFERS_PER_PASS)


def not_sent(deps: Deps, offer: OfferRow) -> None:
    """An offer whose send failed for a passing reason: a later pass sends it."""
    deps.store.offers.unsend(offer["user_id"], offer["id"])


def offer_local_time(offer: OfferRow) -> str:
    """The offer's time in the zone it was read in, as confirmations show times."""
    local = parse_timestamp(offer["due_at"]).astimezone(zone(offer["timezone"]))
    return local.strftime("%Y-%m-%d %H:%M %Z")


def accept_offer(deps: Deps, user_id: int, offer_id: int, now: datetime | None = None) -> TaskRow:
    """Schedule the reminder the user's open offer names, at its time (a repeating one at
    its next time after now); the offer is accepted with the task, in one transaction.
    Raises `OfferError` (nothing scheduled) for no such open offer, `OfferPassed` for a
    single time already past."""
    store = deps.store
    moment = now or datetime.now(UTC)
    with store.atomic():
        offer = store.offers.get(user_id, offer_id)
        if offer is None or offer["state"] != "offered":
            raise OfferError(f"no open offer {offer_id}")
        due = parse_timestamp(offer["due_at"])
        if due <= moment:
            if offer["rule"] is None:
                raise OfferPassed(f"offer {offer_id} is past")
            due = next_run(offer["rule"], offer["timezone"], moment)
        task = store.tasks.add(user_id, offer["request"], due, offer["timezone"], offer["rule"])
        if store.offers.answer(user_id, offer_id, "accepted", task["id"]) is None:
            raise OfferError(f"offer {offer_id} was answered meanwhile")
    return task


def dismiss_offer(deps: Deps, user_id: int, offer_id: int) -> OfferRow:
    """Dismiss the user's open offer; raises `OfferError` when there is none."""
    dismissed = deps.store.offers.answer(user_id, offer_id, "dismissed")
    if dismissed is None:
        raise OfferError(f"no open offer {offer_id}")
    return dismissed


def offers_export(deps: Deps, user_id: int) -> list[dict[str, Any]]:
    """Every reminder offer of the user, for `topica export`."""
    return [dict(offer) for offer in deps.store.offers.of_user(user_id)]
