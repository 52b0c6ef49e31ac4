"""A question about what the user brought up over the conversation: a digest of their
own messages.

"In what order did I bring up the parts of my tracker?", "How many columns did I want
to add across my requests?", "В каком порядке я спрашивал про …?" ask for the user's
own messages on a subject, many of them, from all over the conversation. Ranked as any
question, a few long ones (a paste of code with a line of intent on top) fill the
context and the rest of the sequence is missing. So for such a question the user's
messages come before every other recalled message, in the ranking's order, and each one
longer than `excerpt_recap_chars` is shown by its opening passage of that size (what
the user said they were doing; the paste follows), its other passages in their order
after every other recalled message but before the long answers' passages
(`nodes.response.ranking.passages.passage_order`). None of them is embedded: a digest
of a hundred pastes costs no encoder call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from core.records import MessageRow
from nodes.response.ranking.passages import long_messages

_TALKS = r"(?:conversations|sessions|chats|messages|requests|questions|discussions)"
RECAP_ASKED = re.compile(
    r"\b(?:order|sequence) in which I\b"
    r"|\bin (?:what|which) order (?:did |have )?I\b"
    r"|\bin order how I\b"
    rf"|\bacross (?:all )?(?:my|our|the)\s+(?:\w+\s+){{0,2}}{_TALKS}\b"
    rf"|\bthroughout (?:all )?(?:our|my)\s+(?:\w+\s+){{0,2}}{_TALKS}\b"
    r"|\bhow many (?:\w+\s+){0,5}(?:did|have) I "
    r"(?:mention|bring up|brought up|ask|raise|talk|say|want)"
    r"|\bв каком порядке я\b"
    r"|\bсколько (?:\w+\s+){0,4}я\s+(?:упоминал|спрашивал|говорил|просил|поднимал|называл|хотел)"
    r"|\bво всех (?:наших|моих)\s+(?:\w+\s+)?"
    r"(?:разговорах|беседах|сессиях|чатах|сообщениях|вопросах)"
    r"|\bна протяжении (?:всех )?(?:наших|моих)\s+(?:разговоров|бесед|сессий|чатов)"
    r"|\bза все (?:наши|мои)\s+(?:разговоры|беседы|сессии|чаты)",
    re.IGNORECASE,
)
"""A question about the user's own messages over the conversation: the order they
brought things up in, how many they mentioned, what they said across the sessions."""


def asks_for_recap(queries: Sequence[str]) -> bool:
    """Whether a query asks what the user brought up over the conversation (`RECAP_ASKED`)."""
    return any(RECAP_ASKED.search(query) for query in queries)


def user_first(
    ranked: Sequence[tuple[int, int]], rows: Mapping[int, MessageRow]
) -> list[tuple[int, int]]:
    """`ranked` (topic id, message id) with the user's messages first, each part in its order."""
    return sorted(ranked, key=lambda item: rows[item[1]]["role"] != "user")


def openings(rows: Mapping[int, MessageRow], chars: int) -> dict[int, list[str]]:
    """The passages (of at most `chars`) of the user's messages among `rows` longer than
    `chars`: a digest shows each by its first."""
    users = {i: row for i, row in rows.items() if row["role"] == "user"}
    return long_messages(users, chars, chars)
