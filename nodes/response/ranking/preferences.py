"""A request for advice: the user's stated preferences lead its context.

"Where do you think I should work on my essay?", "Can you help me plan my writing
sessions?", "Что лучше взять в поход?" ask for advice that the user's own words should
shape: "I prefer the quiet library's second floor", "I prefer writing in the mornings
between 7 and 9", "Я предпочитаю лёгкие палатки". Such a statement shares few words with
the request, and it sits among the subject's other messages, so by its fused score it
often stayed behind them. So for a request for advice (`asks_for_advice`), the user's
short messages that state a preference (`stated_preferences`) and that the turn's hits
reach lead the order, right after the standing instructions and within the same number
of leading places (`nodes.response.ranking.messages.rank_topic_messages`). Only short
ones (`excerpt_preference_chars`) lead for being hits: every preference told in passing
in a longer message would take an instruction's place and room. Of those longer ones, the
one most like the request, over the embedder's calibrated floor, leads too
(`nodes.response.ranking.recall.advice_preferences`): "I'm trying to keep my app
lightweight, so I prefer minimal dependencies, how can I …" answers "What libraries would
you suggest?" better than any of the subject's messages. Any other question (what
happened when, what the user did) ranks as before.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from core.records import MessageRow
from nodes.response.ranking.messages import STANDING_RULE

STATED_PREFERENCE = re.compile(
    r"\bI(?:['’]d|\s+would)?\s+(?:prefer|rather)\b|\bmy preference (?:is|for)\b"
    r"|\bя\s+(?:бы\s+)?предпоч(?:итаю|ёл|ел|ла)\b|\bмне\s+больше\s+нравится\b",
    re.IGNORECASE,
)
"""A message that states a preference: "I prefer …", "I'd rather …", "I would prefer …",
"my preference for …", "Я предпочитаю …", "Я бы предпочла …", "Мне больше нравится …"."""

ADVICE_ASKED = re.compile(
    r"\bshould I\b|\bwould you (?:suggest|recommend|advise)\b"
    r"|\bdo you (?:think|suggest|recommend)\b|\bcan you help\b|\bhelp me\b"
    r"|\bhow (?:can|do|should|would) I\b|\bhow would you\b"
    r"|\bwhat (?:\w+\s+){0,3}(?:should|would|could|can) I\b"
    r"|\bany (?:tips|advice|suggestions)\b"
    r"|\b(?:walk me through|explain|show me|teach me),?\s+(?:\w+,?\s+){0,3}?how\b"
    r"|\bпосоветуй|\bподскажи|\bпомоги|\bкак мне\b|\bкак бы (?:ты|вы)\b|\bстоит ли\b"
    r"|\b(?:объясни|покажи|научи)\w*,?\s+(?:\w+,?\s+){0,3}?как\b"
    r"|\bчто (?:мне )?(?:лучше|стоит)\b|\bчто бы (?:ты|вы) (?:посоветовал|предложил)",
    re.IGNORECASE,
)
"""A request for advice or help now: "How should I …", "What would you suggest …", "How
would you approach …", "Can you help me …", "Walk me through how …", "Посоветуй …", "Как
мне …", "Как бы ты …", "Стоит ли …", "Что лучше …", "Объясни, как …". A question about
what was ("Have I ever …", "How many days passed …", "Что мне сказал врач?") is not one,
nor is "Walk me through the order in which I brought up …"."""


def asks_for_advice(queries: Sequence[str]) -> bool:
    """Whether a query asks for advice or help (`ADVICE_ASKED`)."""
    return any(ADVICE_ASKED.search(query) for query in queries)


def stated_preferences(
    rows: Iterable[MessageRow], near: Collection[int], max_chars: int
) -> frozenset[int]:
    """The user's messages among `rows` of at most `max_chars` that state a preference
    (`STATED_PREFERENCE`) and are among `near` (the turn's message hits); a standing
    instruction is one already (`STANDING_RULE`). None when `max_chars` is 0."""
    if max_chars <= 0:
        return frozenset()
    return frozenset(
        row["id"]
        for row in rows
        if row["id"] in near
        and row["role"] == "user"
        and len(row["content"]) <= max_chars
        and STATED_PREFERENCE.search(row["content"])
        and not STANDING_RULE.search(row["content"])
    )
