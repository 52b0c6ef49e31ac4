"""Forgetting at the user's request (the bot's /forget), shared by every front end.

A fact leaves the store (its history records the deletion) and the vector index; a
person likewise; a topic takes its messages, their documents' passages and the facts
learnt from it (the facts whose source is the topic) with it, in one transaction. The
vector queue takes every vector out of the index, now or on the next indexing run if the
vector store is down.
"""

from __future__ import annotations

import logging
from typing import Literal, NamedTuple

from core.deps import Deps
from core.errors import StoreError, VectorStoreUnavailable
from core.records import FactRow
from core.tracing import user_key

log = logging.getLogger(__name__)

ForgetKind = Literal["fact", "person", "topic"]
FORGOTTEN = "forgotten at the user's request"
FORGOTTEN_WITH_TOPIC = "forgotten with the topic it was learnt from"


class Choice(NamedTuple):
    kind: ForgetKind
    id: int
    text: str


def forget_choices(deps: Deps, user_id: int, only: ForgetKind | None = None) -> list[Choice]:
    """Everything the user can forget, in menu order: facts (most important first), people
    (by name), topics (newest first); only one kind if asked."""
    store = deps.store
    choices: list[Choice] = []
    if only in (None, "fact"):
        choices += [Choice("fact", f["id"], f["content"]) for f in store.facts.all_of(user_id)]
    if only in (None, "person"):
        people = sorted(store.people.all_of(user_id), key=lambda p: p["name"].casefold())
        choices += [Choice("person", p["id"], person_label(p)) for p in people]
    if only in (None, "topic"):
        topics = sorted(store.topics.all_of(user_id), key=lambda t: t["last_message_at"])
        choices += [Choice("topic", t["id"], t["summary"]) for t in reversed(topics)]
    return choices


def person_label(person: dict) -> str:
    return person["name"] + (f" ({person['circle']})" if person.get("circle") else "")


def describe_choice(deps: Deps, user_id: int, kind: ForgetKind, item_id: int) -> str | None:
    """What the confirmation shows of the item; None when the user has no such item."""
    store = deps.store
    try:
        if kind == "fact":
            return store.facts.get(user_id, item_id)["content"]
        if kind == "person":
            return person_label(store.people.get(user_id, item_id))
        return store.topics.get(user_id, item_id)["summary"]
    except StoreError:
        return None


def facts_of_topic(deps: Deps, user_id: int, topic_id: int) -> list[FactRow]:
    return deps.store.facts.of_topic(user_id, topic_id)


def forget(deps: Deps, user_id: int, kind: ForgetKind, item_id: int) -> list[FactRow]:
    """Forget the item (raises `StoreError` when the user has no such item); the facts
    forgotten with a topic."""
    store = deps.store
    gone: list[FactRow] = []
    if kind == "fact":
        store.facts.delete(user_id, item_id, reason=FORGOTTEN)
    elif kind == "person":
        store.people.delete(user_id, item_id)
    else:
        with store.atomic():
            store.topics.get(user_id, item_id)
            for fact in store.facts.of_topic(user_id, item_id):
                gone.append(
                    store.facts.delete(
                        user_id, fact["id"], reason=FORGOTTEN_WITH_TOPIC, topic_id=item_id
                    )
                )
            store.topics.delete(user_id, item_id)
    try:
        deps.indexer.index_all(user_id)
    except VectorStoreUnavailable as error:
        log.warning("user %s: forgotten, vectors removed later: %s", user_key(user_id), error)
    return gone
