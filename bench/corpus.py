"""One ingested LoCoMo conversation, as every retrieval method of the evaluation sees it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from bench.locomo import Conversation
from core.deps import Deps
from core.records import MessageRow
from core.text import transcript


@dataclass
class Corpus:
    """A conversation stored for one user: its messages by external id (dia_id) in order,
    their transcript lines (the same rendering topic content uses) and message vectors."""

    deps: Deps
    user_id: int
    conversation: Conversation
    order: list[str]
    rows: dict[str, MessageRow]
    lines: dict[str, str]
    message_vectors: np.ndarray
    """Unit vectors aligned with `order`, read back from the message index."""
    external_of: dict[int, str] = field(init=False)
    position: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.external_of = {row["id"]: external for external, row in self.rows.items()}
        self.position = {external: index for index, external in enumerate(self.order)}

    @classmethod
    async def load(cls, deps: Deps, user_id: int, conversation: Conversation) -> Corpus:
        rows = await asyncio.to_thread(deps.store.messages.all_of, user_id)
        by_row = await asyncio.to_thread(
            deps.vectors.vectors, "messages", user_id, [row["id"] for row in rows]
        )
        dimensions = next(iter(by_row.values())).shape[0] if by_row else 0
        matrix = (
            np.stack([by_row.get(row["id"], np.zeros(dimensions, np.float32)) for row in rows])
            if rows
            else np.zeros((0, dimensions), np.float32)
        )
        return cls(
            deps=deps,
            user_id=user_id,
            conversation=conversation,
            order=[row["external_id"] for row in rows],
            rows={row["external_id"]: row for row in rows},
            lines={row["external_id"]: transcript([row]) for row in rows},
            message_vectors=matrix,
        )

    def externals(self, row_ids: Sequence[int]) -> list[str]:
        """External ids of stored rows, in the given order (unknown rows skipped)."""
        return [self.external_of[i] for i in row_ids if i in self.external_of]

    def in_order(self, external_ids: Sequence[str]) -> tuple[str, ...]:
        return tuple(sorted(external_ids, key=self.position.__getitem__))

    def similarity(self, query_vector: np.ndarray, external_ids: Sequence[str]) -> np.ndarray:
        """Cosine of the query to each of these messages."""
        indexes = [self.position[i] for i in external_ids]
        return self.message_vectors[indexes] @ np.asarray(query_vector, dtype=np.float32)
