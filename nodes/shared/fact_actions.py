"""One service applies fact actions, for the Archivist and the `manage_memory` tool alike.

`apply_fact_change` writes one add, update or delete through the facts repository (which
filters by user id and queues the vectors); `index_memory` then indexes what was queued,
and leaves it queued for a later run when the vector store is down.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from core.errors import VectorStoreUnavailable
from core.ports import Indexer, Store, VectorKind
from core.records import FactRow, FactType
from core.tracing import user_key

log = logging.getLogger(__name__)

DEFAULT_FACT_TYPE: FactType = "context"
DEFAULT_IMPORTANCE = 50


class IncompleteFactAction(ValueError):
    """An action that lacks what its verb needs: content to add, an id to change."""


@dataclass(frozen=True, kw_only=True)
class FactChange:
    """One change to a user's facts; `None` leaves a field as it is (or its default)."""

    action: Literal["add", "update", "delete"]
    fact_id: int | None = None
    content: str | None = None
    fact_type: FactType | None = None
    importance: int | None = None
    reason: str | None = None
    topic_id: int | None = None


def apply_fact_change(store: Store, user_id: int, action: FactChange) -> FactRow:
    """Apply one action for `user_id` and return the fact as it now stands (as it stood,
    for a delete). Raises `IncompleteFactAction`, or `StoreError` for an id of another
    user or a bad value; nothing is written then."""
    source = {"reason": action.reason, "topic_id": action.topic_id}
    if action.action == "add":
        if not action.content or not action.content.strip():
            raise IncompleteFactAction("add needs the fact's content")
        importance = DEFAULT_IMPORTANCE if action.importance is None else action.importance
        fact_type = action.fact_type or DEFAULT_FACT_TYPE
        return store.facts.add(user_id, action.content, fact_type, importance, **source)
    if action.fact_id is None:
        raise IncompleteFactAction(f"{action.action} needs fact_id")
    if action.action == "update":
        changes = {"content": action.content or None, "importance": action.importance}
        return store.facts.update(
            user_id, action.fact_id, fact_type=action.fact_type, **changes, **source
        )
    return store.facts.delete(user_id, action.fact_id, **source)


def index_memory(indexer: Indexer, user_id: int, *kinds: VectorKind) -> None:
    """Index the queued records of `kinds`; a vector store that is down leaves them in the
    vector queue, which a later run drains (the stored change stands either way)."""
    try:
        for kind in kinds:
            indexer.index(user_id, kind)
    except VectorStoreUnavailable as error:
        log.warning("user %s: %s stored, indexing postponed: %s", user_key(user_id), kinds, error)
