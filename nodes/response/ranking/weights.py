"""What the ranking is tuned by, as one value."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.context import ResponseContext
from core.tuning import Tuning, packaged_tuning


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
