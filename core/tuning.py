"""Retrieval tuning: the weights, depths and floors of search and ranking, as data.

The values come from a calibration profile per embedder (a JSON object of `Tuning`'s
fields): one written into the data directory (`profile_path`, by `topica eval floor
--save`) wins over the packaged one (`core/profiles/<embedder>.json`); an embedder
with neither is read with the bundled USE embedder's profile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from core.settings import EmbeddingsProvider, Settings

BUNDLED_EMBEDDER = "use-multilingual-v3"
"""The local embedder's name (`stores.embedders.build_embedder`), whose profile ships."""


@dataclass(frozen=True, kw_only=True)
class Tuning:
    """How one turn searches, ranks and fills the budget; every field from a profile."""

    rrf_k: int
    """Reciprocal Rank Fusion's constant, in the topic fusion and the message scores."""
    message_hits_count: int
    """Length of each message-level ranked list (vectors, full text) in the fusion."""
    message_vector_floor: float
    """The best message cosine below which a memory of any size holds nothing on a turn."""
    topic_vector_floor: float
    message_vector_floor_base: float
    """In a smaller memory a vector floor is min(floor, base + per_log · ln n), n the
    archived messages (topics): the best of fewer unrelated records reaches less."""
    message_vector_floor_per_log: float
    topic_vector_floor_base: float
    topic_vector_floor_per_log: float
    message_bm25_floor: float
    topic_bm25_floor: float
    word_share_floor: float
    """The share of its content words a question over a floor must find in memory to be
    about it (`nodes.response.gate.word_share`); 0: none."""
    word_share_floor_base: float
    """In a smaller memory min(floor, base + per_log · ln n), n the archived messages."""
    word_share_floor_per_log: float
    fact_candidates_count: int
    facts_threshold: float
    people_candidates_count: int
    people_threshold: float
    rerank_max_people: int
    excerpt_threshold_chars: int
    """A topic larger than this the reranker may excerpt rather than show whole."""
    excerpt_lead_hits: int
    """The best full-text hits that lead whatever their fused score."""
    excerpt_vector_lead_hits: int
    """The best message-vector hits that lead beside them, each at its rank."""
    excerpt_rule_hits: int
    """The user's standing instructions ("Always …", "Всегда …") among the turn's message
    hits that lead before every other message (`nodes.response.ranking.messages.standing_rules`);
    0: none."""
    excerpt_vector_weight: float
    """A vector hit's vote as a share of a full-text hit's at the same rank."""
    excerpt_neighbour_hits: int
    """Hits at or above this rank lend the messages beside them a share of their vote."""
    excerpt_neighbour_weight: float
    """That share; a message `d` places away gets the share to the power `d`."""
    excerpt_neighbour_reach: int
    """How many places from a hit the share goes."""
    excerpt_answer_last_chars: int
    """An assistant's message longer than this comes after every other recalled one
    (`nodes.response.ranking.messages.long_answers`)."""
    excerpt_long_answer_chars: int
    """A recalled message of any role longer than this is shown by passages
    (`excerpt_passage_chars`)."""
    excerpt_passage_chars: int
    """The most characters of one passage of a long message (`nodes.response.ranking.passages`);
    0: long messages are shown whole."""
    excerpt_text_pool: int
    """How deep the full-text message list runs for the context's evidence, ranked again
    with each message longer than a passage by its best one
    (`nodes.response.ranking.text_passages`); at most `message_hits_count`: off."""
    excerpt_preference_chars: int
    """For a request for advice, the user's messages up to this long that state a
    preference ("I prefer …") among the turn's hits lead after the standing instructions,
    within `excerpt_rule_hits` (`nodes.response.ranking.preferences`); 0: none."""
    excerpt_recap_chars: int
    """For a question about what the user brought up over the conversation, the user's
    messages come first, each longer than this by its opening passage of this size
    (`nodes.response.ranking.recap`); 0: ranked as any question."""
    excerpt_passages_in_place: bool
    """A long answer's best passage keeps its message's rank (off: after every other
    recalled message, as the whole answer would be)."""
    excerpt_named_speakers: bool
    """A question naming some of the recalled messages' authors but not all ranks the
    others' hits only by what they lend their neighbours."""
    excerpt_feedback_messages: int
    """How many of the first ranked messages move the query's vector toward them for one
    more vector list (`nodes.response.ranking.feedback`); 0: no feedback."""
    excerpt_feedback_weight: float
    """Their mean vector's weight beside the query's (Rocchio's beta)."""
    excerpt_vector_depth: int
    """How deep the message vector list runs for ranking the recalled topics' messages;
    the fusion reads only its first `message_hits_count`."""
    auto_rag_top_k: int
    auto_rag_search_limit: int
    auto_rag_min_similarity: float
    """Cosine to the current message below which an earlier one is not relevant."""
    auto_rag_min_message_tokens: int
    """Shorter messages ("ok", "thanks") are never recalled."""

    @classmethod
    def from_json(cls, values: dict[str, Any], where: str) -> Tuning:
        """The tuning of a profile; a missing or unknown field is one clear error."""
        names = {f.name for f in fields(cls)}
        if missing := sorted(names - set(values)):
            raise ValueError(f"{where}: calibration profile lacks {', '.join(missing)}")
        if unknown := sorted(set(values) - names):
            raise ValueError(f"{where}: unknown calibration fields {', '.join(unknown)}")
        return cls(**values)


def profile_path(data_dir: Path, embedder: str) -> Path:
    """Where a data directory keeps its own calibration profile of `embedder`."""
    return data_dir / "calibration" / f"{embedder}.json"


@cache
def packaged_tuning(embedder: str = BUNDLED_EMBEDDER) -> Tuning:
    """The profile shipped for `embedder`, or the bundled embedder's."""
    profiles = resources.files("core") / "profiles"
    profile = profiles / f"{embedder}.json"
    if not profile.is_file():
        profile = profiles / f"{BUNDLED_EMBEDDER}.json"
    return Tuning.from_json(json.loads(profile.read_text("utf-8")), str(profile))


def load_tuning(data_dir: Path, embedder: str) -> Tuning:
    """The data directory's profile of `embedder` if written, else the packaged one."""
    path = profile_path(data_dir, embedder)
    if path.is_file():
        return Tuning.from_json(json.loads(path.read_text("utf-8")), str(path))
    return packaged_tuning(embedder)


def embedder_name(settings: Settings) -> str:
    """The name of the embedder `settings` configure (`stores.embedders.build_embedder`)."""
    if settings.embeddings_provider is EmbeddingsProvider.LOCAL:
        return BUNDLED_EMBEDDER
    return settings.embeddings_model
