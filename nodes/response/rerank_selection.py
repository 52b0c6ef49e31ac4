"""What the reranker shows the model and how its answer becomes a selection (seed 001).

The prompt's candidate lines, the parsing of the final JSON, and the three ways a
selection is made: the model's choice within the candidate sets and limits, the search
order (nothing from the model to go on), and the ids the model asked to load (it asked,
but gave no usable answer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolCall
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from core.context import ResponseContext
from core.found import PersonCandidate, TopicCandidate, found_in
from core.ports import Store
from core.records import ID_RANGE
from core.state import RerankAnswer, RerankState, SelectedPerson, SelectedTopic
from core.text import neutralize
from nodes.response.topic_content import TOOL_NAME, size_label
from nodes.shared.clock import prompt_date, turn_moment
from nodes.shared.structured import LLMOutputError, parse_json_value
from prompts import reranker as prompt

NO_REASON = "chosen by the reranker (no reason given)"


# -- prompt material ------------------------------------------------------------------


def one_line(text: str) -> str:
    return " ".join(text.split())


def format_topic_candidate(candidate: TopicCandidate) -> str:
    """`[ID:42] 2025-07-25 | 20 msgs, ~16K chars | summary` (seed 001's candidate format)."""
    return (
        f"[ID:{candidate['id']}] {candidate['date']} | {candidate['message_count']} msgs, "
        f"{size_label(candidate['size_chars'])} | {one_line(neutralize(candidate['summary']))}"
    )


def format_person_candidate(person: PersonCandidate) -> str:
    """`[P:7] Name — description`."""
    description = one_line(neutralize(person["description"]))
    name = one_line(neutralize(person["name"]))
    return f"[P:{person['id']}] {name}" + (f" — {description}" if description else "")


def build_prompt(
    state: RerankState,
    candidates: Sequence[TopicCandidate],
    people: Sequence[PersonCandidate],
    context: ResponseContext,
) -> list[BaseMessage]:
    profile = state.get("profile") or []
    system = prompt.SYSTEM.format(
        max_topics=context.rerank_max_topics,
        max_people=context.tuning.rerank_max_people,
        max_tool_calls=context.rerank_max_tool_calls,
        excerpt_threshold=context.tuning.excerpt_threshold_chars,
    )
    user = prompt.USER.format(
        date=prompt_date(turn_moment(context)),
        query=neutralize(state["query"].strip()),
        user_message=neutralize(state["user_message"].strip()),
        profile="\n".join(f"- {one_line(neutralize(fact))}" for fact in profile)
        or prompt.NO_PROFILE,
        topic_count=len(candidates),
        candidates="\n".join(map(format_topic_candidate, candidates)) or prompt.NO_TOPICS,
        people_count=len(people),
        people="\n".join(map(format_person_candidate, people)) or prompt.NO_PEOPLE,
    )
    return [SystemMessage(system), HumanMessage(user)]


# -- the model's replies --------------------------------------------------------------


class TopicChoice(BaseModel):
    id: int
    reason: str = ""
    excerpt: str | None = None


class PersonChoice(BaseModel):
    id: int
    reason: str = ""


class FinalAnswer(BaseModel):
    """The final JSON; bare ids (`[42, 18]` or `{"topics": [42, 18]}`) are the old form."""

    topics: list[TopicChoice] = Field(default_factory=list)
    people: list[PersonChoice] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _old_list_form(cls, value: object) -> object:
        if isinstance(value, list):
            return {"topics": value}
        if isinstance(value, dict) and not {"topics", "people"} & value.keys():
            raise ValueError('expected "topics" and/or "people"')
        return value

    @field_validator("topics", "people", mode="before")
    @classmethod
    def _bare_ids(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, list):
            return [{"id": item} if isinstance(item, int | str) else item for item in value]
        return value


def parse_answer(text: str) -> RerankAnswer:
    """The final answer from the model's text; raises LLMOutputError when it is unusable."""
    try:
        answer = FinalAnswer.model_validate(parse_json_value(text))
    except ValidationError as error:
        raise LLMOutputError(f"reranker answer does not match the format: {error}") from error
    topics = [topic for topic in answer.topics if topic.id in ID_RANGE]
    people = [person for person in answer.people if person.id in ID_RANGE]
    return RerankAnswer(
        topics=[
            {"id": topic.id, "reason": topic.reason.strip(), "excerpt": topic.excerpt}
            for topic in topics
        ],
        people=[{"id": person.id, "reason": person.reason.strip()} for person in people],
        unknown_ids=len(answer.topics) + len(answer.people) - len(topics) - len(people),
    )


def content_calls(reply: AIMessage) -> list[ToolCall]:
    return [call for call in reply.tool_calls if call["name"] == TOOL_NAME]


def requested_topic_ids(reply: AIMessage) -> list[int]:
    """Topic ids the reply asks to load, in the order asked (malformed ids, and ids past
    64 bits, which no topic has, skipped)."""
    ids: list[int] = []
    for call in content_calls(reply):
        raw = call["args"].get("ids")
        for value in raw if isinstance(raw, list) else []:
            if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
                ids.append(int(value))
    return [topic_id for topic_id in ids if topic_id in ID_RANGE]


# -- candidates and selections -------------------------------------------------------


def owned_candidates(
    store: Store,
    user_id: int,
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
) -> tuple[list[TopicCandidate], list[PersonCandidate]]:
    """Only the candidates that are this user's topics and people, in their order.

    Search already filters by user; this keeps a stale id (a topic merged away since) or
    a forged one from reaching the model's prompt or the selection.
    """
    topic_ids = store.topics.owned(user_id, [c["id"] for c in candidates])
    person_ids = store.people.owned(user_id, [p["id"] for p in people_candidates])
    return (
        [candidate for candidate in candidates if candidate["id"] in topic_ids],
        [person for person in people_candidates if person["id"] in person_ids],
    )


@dataclass(frozen=True)
class Selection:
    topics: list[SelectedTopic]
    people: list[SelectedPerson]
    dropped_ids: int
    by_search_order: bool = False
    """The topics are the search order's first: no model chose them nor asked for any."""


def select_answer(
    answer: RerankAnswer,
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
    *,
    max_topics: int,
    max_people: int,
    excerpt_threshold_chars: int,
) -> Selection:
    """The model's choice within the candidate sets and limits.

    Ids outside the candidate sets are dropped and counted; repeats are ignored; an
    excerpt is kept only for a topic larger than the threshold (smaller ones are used whole).
    """
    topics_by_id = {candidate["id"]: candidate for candidate in candidates}
    people_ids = {person["id"] for person in people_candidates}
    dropped = answer.get("unknown_ids", 0)
    topics: dict[int, SelectedTopic] = {}
    for pick in answer["topics"]:
        candidate = topics_by_id.get(pick["id"])
        if candidate is None:
            dropped += 1
        elif pick["id"] not in topics and len(topics) < max_topics:
            excerpt = (pick["excerpt"] or "").strip()
            keep_excerpt = excerpt and candidate["size_chars"] > excerpt_threshold_chars
            topics[pick["id"]] = SelectedTopic(
                id=pick["id"],
                reason=pick["reason"] or NO_REASON,
                excerpt=excerpt if keep_excerpt else None,
                score=candidate["score"],
            )
    people: dict[int, SelectedPerson] = {}
    for pick in answer["people"]:
        if pick["id"] not in people_ids:
            dropped += 1
        elif pick["id"] not in people and len(people) < max_people:
            people[pick["id"]] = SelectedPerson(id=pick["id"], reason=pick["reason"] or NO_REASON)
    return Selection(list(topics.values()), list(people.values()), dropped)


def vector_people(
    people_candidates: Sequence[PersonCandidate], reason: str, max_people: int
) -> list[SelectedPerson]:
    return [
        SelectedPerson(id=person["id"], reason=f"vector order ({reason})")
        for person in people_candidates[:max_people]
    ]


def fallback_selection(
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
    reason: str,
    *,
    requested_ids: Sequence[int] = (),
    max_topics: int,
    max_people: int,
) -> Selection:
    """The first topics the model asked to load, in the order asked (seed: it puts the
    most relevant first); when it asked for none of the candidates (or for nothing), the
    top candidates in search order (they arrive best first: `order_topics`)."""
    topics_by_id = {candidate["id"]: candidate for candidate in candidates}
    unique_ids = list(dict.fromkeys(requested_ids))
    known = [topic_id for topic_id in unique_ids if topic_id in topics_by_id]
    label = f"requested by the reranker ({reason})" if known else search_order_reason(reason)
    chosen = known or [candidate["id"] for candidate in candidates]
    topics = [
        SelectedTopic(
            id=topic_id, reason=label, excerpt=None, score=topics_by_id[topic_id]["score"]
        )
        for topic_id in chosen[:max_topics]
    ]
    people = vector_people(people_candidates, reason, max_people)
    return Selection(topics, people, len(unique_ids) - len(known), by_search_order=not known)


def search_order_reason(reason: str | None) -> str:
    return f"vector order ({reason})"


def fill_candidates(state: Mapping[str, Any]) -> list[SelectedTopic]:
    """The search's topics (`found`) past the selection whose messages may fill the room it
    leaves in the context, in search order.

    When the search order made the selection (no model chose, nor asked for content), the
    selection's size is only the reranker's limit (`rerank_max_topics`), not a judgement:
    the next candidates come from the same ranking, and their best messages can hold an
    answer the first topics do not. Every other candidate is offered then, and the context's
    excerpts (`nodes.response.ranking`) rank the messages of all of them together. When a
    model chose, its choice is the context's, as seed 001 has it: none.
    """
    if not state.get("selected_by_search_order"):
        return []
    selected = {topic["id"] for topic in state.get("selected_topics") or []}
    reason = search_order_reason(state.get("rerank_fallback"))
    return [
        SelectedTopic(id=candidate["id"], reason=reason, excerpt=None, score=candidate["score"])
        for candidate in found_in(state)["topics"]
        if candidate["id"] not in selected
    ]


@dataclass(frozen=True)
class ShownTopics:
    """The topics a context recalls, best first: the selection (with its reasons), then
    the candidates whose messages may fill the room it leaves (`fill_candidates`)."""

    chosen: list[SelectedTopic]
    more: list[SelectedTopic]

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> ShownTopics:
        """A response run's: its `selected_topics`, then `fill_candidates(state)`."""
        return cls(list(state.get("selected_topics") or []), fill_candidates(state))

    @property
    def topics(self) -> list[SelectedTopic]:
        return [*self.chosen, *self.more]
