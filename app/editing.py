"""Corrections the user makes to their memory by hand (the Mini App), shared by every
front end.

Each write goes through the store's repositories (which queue the record's vector) and
then the indexer, so an edited fact or a renamed person is searchable at once; when the
vector store is down the queue carries the change to the next indexing run. Every call
raises `StoreError` when the user has no such record.
"""

from __future__ import annotations

import logging

from app.forgetting import FORGOTTEN
from core.deps import Deps
from core.errors import StoreError, VectorStoreUnavailable
from core.records import FactRow, PersonRow
from core.tracing import user_key

log = logging.getLogger(__name__)

EDITED = "edited by the user"


def reindex(deps: Deps, user_id: int) -> None:
    """Bring the user's vectors in line with the store (later, if the index is down)."""
    try:
        deps.indexer.index_all(user_id)
    except VectorStoreUnavailable as error:
        log.warning("user %s: edited, vectors updated later: %s", user_key(user_id), error)


def edit_fact(deps: Deps, user_id: int, fact_id: int, content: str) -> FactRow:
    """The fact with new wording; its history keeps the old one with reason `EDITED`."""
    fact = deps.store.facts.update(user_id, fact_id, content=content, reason=EDITED)
    reindex(deps, user_id)
    return fact


def rename_person(deps: Deps, user_id: int, person_id: int, name: str) -> PersonRow:
    """The person under a new name; the old name stays as an alias."""
    old = deps.store.people.get(user_id, person_id)
    person = deps.store.people.update(user_id, person_id, name=name, aliases=[old["name"]])
    reindex(deps, user_id)
    return person


def merge_people(deps: Deps, user_id: int, source_id: int, target_id: int) -> PersonRow:
    """`source_id` folded into `target_id` (its names become aliases)."""
    if source_id == target_id:
        raise StoreError("a person cannot be merged into themselves")
    person = deps.store.people.merge(user_id, source_id, target_id)
    reindex(deps, user_id)
    return person


def forget_everything(deps: Deps, user_id: int) -> int:
    """Forget every fact, person and topic of the user (each as `/forget` forgets it, the
    topics with their messages and documents), every task with its runs and every
    reminder offer; how many records went."""
    store = deps.store
    with store.atomic():
        facts = store.facts.all_of(user_id)
        for fact in facts:
            store.facts.delete(user_id, fact["id"], reason=FORGOTTEN)
        people = store.people.all_of(user_id)
        for person in people:
            store.people.delete(user_id, person["id"])
        topics = store.topics.all_of(user_id)
        for topic in topics:
            store.topics.delete(user_id, topic["id"])
        tasks = store.tasks.forget(user_id) + store.offers.forget(user_id)
    reindex(deps, user_id)
    return len(facts) + len(people) + len(topics) + tasks
