"""What the ranking is tuned by, as one value."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.context import ResponseContext
from core.tuning import Tuning, packaged_tuning

PASSAGES_PER_ROOM = 3
"""A passage of a long message takes at most this share of a context's room
(`Ranking.for_room`): in a small context a 500-character passage took half the room, and
the message beside it that answers with it did not fit; with a third, at least three
things are shown."""


@dataclass(frozen=True)
class Ranking:
    """The ranking's tuning: the embedder's calibration profile (`Tuning`: weights, floors,
    depths) and the pauses that end a sitting (`nodes.shared.clock.ends_sitting`), past
    which a hit lends its replies nothing."""

    tuning: Tuning = field(default_factory=packaged_tuning)
    interval_s: float = field(default_factory=lambda: ResponseContext(user_id=0).chunk_interval_s)
    max_gap_s: float = field(default_factory=lambda: ResponseContext(user_id=0).topic_max_gap_s)

    @classmethod
    def of(cls, context: ResponseContext | None) -> Ranking:
        """A run's ranking (None: the packaged profile and the default pauses)."""
        if context is None:
            return cls()
        return cls(context.tuning, context.chunk_interval_s, context.topic_max_gap_s)

    def for_room(self, max_chars: int) -> Ranking:
        """This ranking for a context of `max_chars` characters: a long message's passages
        (`excerpt_passage_chars`) at most a `PASSAGES_PER_ROOM`th of it, never more than the
        profile's nor less than that share of the profile's (each passage is embedded: a
        smaller one costs more of them); 0, passages off, stays 0."""
        size = self.tuning.excerpt_passage_chars
        share = PASSAGES_PER_ROOM
        fitted = max(size // share, min(size, max_chars // share))
        if size <= 0 or fitted == size:
            return self
        return replace(self, tuning=replace(self.tuning, excerpt_passage_chars=fitted))

    def weights(self) -> dict[str, float]:
        """`rank_topic_messages`' keyword weights: how many hits of each kind lead, and
        the `score_weights`."""
        tuning = self.tuning
        return {
            "lead": tuning.excerpt_lead_hits,
            "vector_lead": tuning.excerpt_vector_lead_hits,
            "rule_lead": tuning.excerpt_rule_hits,
            **self.score_weights(),
        }

    def score_weights(self) -> dict[str, float]:
        """`message_scores`' keyword weights (no lead: leading is a rule of the fill)."""
        tuning = self.tuning
        return {
            "vector_weight": tuning.excerpt_vector_weight,
            "neighbour_hits": tuning.excerpt_neighbour_hits,
            "neighbour_weight": tuning.excerpt_neighbour_weight,
            "neighbour_reach": tuning.excerpt_neighbour_reach,
        }
