"""Questions about the user's own past: whether they did something, and how often.

Such a question ("Have I ever worked on medians?", "How many classification problems
have I completed?") is answered by the mentions of what it asks about, often several
that disagree or add up, not by the standing instructions that shape the answers to a
request (`nodes.response.ranking.recall.leading_rules`). A yes/no one also wants every
mention of whom it names (`nodes.response.ranking.summary.naming_first`) and takes no
feedback from the first messages ranked (`nodes.response.ranking.feedback`); a count
keeps both, as adding up what was done needs them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ASKS_WHETHER_I = re.compile(
    r"^\W*(?:have|has|had|did|do|does|was|were)\s+(?:i|we)\b|\bли\s+(?:я|мы)\b",
    re.IGNORECASE,
)
"""A yes/no question about the user's own past or habits: "Have I ever …", "Did I …", "Do
I usually …", "Получал ли я …", "Были ли мы …"."""

ASKS_HOW_MANY_I = re.compile(
    r"^\W*how\s+(?:many|much)\b[^?]*?\b(?:have|had|did)\s+i\b"
    r"|^\W*сколько\b[^?]*?\bя\s+\w+(?:л|ла|ло|ли)(?:сь|ся)?\b",
    re.IGNORECASE,
)
"""A count of what the user did: "How many problems have I completed …", "How much did I
increase …", "Сколько задач я решил …" (a past verb: "Сколько стоит, если я куплю …" is
a request)."""


def asks_whether_i(queries: Sequence[str]) -> bool:
    """Whether a query is a yes/no question about the user's own past (`ASKS_WHETHER_I`)."""
    return any(ASKS_WHETHER_I.search(query) for query in queries)


def asks_how_many_i(queries: Sequence[str]) -> bool:
    """Whether a query counts what the user did (`ASKS_HOW_MANY_I`)."""
    return any(ASKS_HOW_MANY_I.search(query) for query in queries)
