"""One turn's reads of the vector index, degrading to nothing when it is down.

The search (`nodes.response.search`) and auto-RAG (`nodes.response.auto_rag`) read the
vector index through it: after the first failure every read answers empty at once, and
the turn goes on with full-text search alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from core.errors import VectorStoreUnavailable
from core.ports import VectorIndex, VectorKind
from core.records import MessageRow
from core.tracing import user_key

log = logging.getLogger(__name__)


class VectorReads:
    """One turn's reads of the vector index, degrading to nothing when it is down.

    After the first failure every read answers empty at once (no second wait on a dead
    server); `unavailable` holds the error, so the caller can say the turn went on with
    full-text search alone."""

    def __init__(self, vectors: VectorIndex, user_id: int) -> None:
        self._vectors = vectors
        self._user_id = user_id
        self.unavailable: str | None = None

    def _failed(self, error: VectorStoreUnavailable) -> None:
        if self.unavailable is None:
            log.warning(
                "user %s: vectors unavailable, full-text search only: %s",
                user_key(self._user_id),
                error,
            )
        self.unavailable = str(error)

    def query(
        self,
        kind: VectorKind,
        vector: Any,
        limit: int,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[int, float]]:
        if self.unavailable is not None:
            return []
        try:
            return self._vectors.query(kind, self._user_id, vector, limit, where=where)
        except VectorStoreUnavailable as error:
            self._failed(error)
            return []

    def nearest(
        self, kind: VectorKind, vectors: Sequence[Any], limit: int
    ) -> list[list[tuple[int, float]]]:
        """`VectorIndex.nearest` for this user, or no hits per query once the index is down."""
        if self.unavailable is None:
            try:
                return self._vectors.nearest(kind, self._user_id, vectors, limit)
            except VectorStoreUnavailable as error:
                self._failed(error)
        return [[] for _ in vectors]

    def message_vectors(self, embedder: Any, messages: Sequence[MessageRow]) -> dict[int, Any]:
        """The messages' vectors from the index; any the index cannot give (down, or not
        indexed yet) are embedded here."""
        found: dict[int, Any] = {}
        if self.unavailable is None and messages:
            try:
                found = self._vectors.vectors(
                    "messages", self._user_id, [m["id"] for m in messages]
                )
            except VectorStoreUnavailable as error:
                self._failed(error)
        missing = [m for m in messages if m["id"] not in found]
        if missing:
            encoded = embedder.encode([m["content"] for m in missing])
            found.update({m["id"]: encoded[n] for n, m in enumerate(missing)})
        return found
