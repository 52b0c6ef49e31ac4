"""A request for a summary of the user's dealings with someone, or a yes/no question
about the user's own past with them: the user's own messages that name them first.

"Can you give me a summary of how my work with Robert has developed?", "Подведи итог
моей работы с Робертом" ask for what the user told over the conversation about that
person: each time they met, what the person said, what the user decided after it. Those
are the user's messages that name them, spread over many topics and sessions; ranked as
any question, a few of them come first and the rest sink among the many other messages
on the same project. So for a summary request that names someone the conversation
writes as a name (`nodes.response.ranking.floors.written_as_a_name`: "Robert", never
"The"), the user's messages naming them come right after the standing instructions
and preferences that lead, in the ranking's order (a budget too small for all of them
keeps the best), and every other message after them as ranked. The assistant's
messages naming them are its long answers, which echo the name: they keep their place.

A yes/no question about the user's own past ("Have I ever met Bryan and received
storytelling advice from him?", "Встречался ли я с Брайаном?", `asks_whether_i`) is
answered the same way, by every mention of whom it names: the message that says it
happened and the later one that says it never did. Ranked as any question, the messages
on the same subject without the name ("I met Matthew … he offered some tips") come
between them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from core.records import MessageRow
from nodes.response.ranking.floors import name_pattern, name_words, written_as_a_name
from nodes.response.ranking.past import asks_whether_i

SUMMARY_ASKED = re.compile(
    r"\bsummar(?:y|ies|ise|ize|ised|ized|ising|izing)\b"
    r"|\bрезюмир\w*|\bподвед\w*\s+итог|\bподыт\w*|\bсводк\w*",
    re.IGNORECASE,
)
"""A request for a summary: "summary", "summarize", "резюмируй", "подведи итоги",
"подытожь", "сводка". Not "резюме", which is a CV as often as a summary."""


def asks_for_summary(queries: Sequence[str]) -> bool:
    """Whether a query asks for a summary (`SUMMARY_ASKED`)."""
    return any(SUMMARY_ASKED.search(query) for query in queries)


def asks_for_mentions(queries: Sequence[str]) -> bool:
    """Whether the queries are answered by every mention of whom they name: a summary
    request (`asks_for_summary`) or a yes/no question about the user's past
    (`asks_whether_i`)."""
    return asks_for_summary(queries) or asks_whether_i(queries)


def named_in(queries: Sequence[str], rows: Mapping[int, MessageRow]) -> frozenset[int]:
    """The user's messages among `rows` naming someone the queries name (`name_words`)
    whom the messages write as a name (`written_as_a_name`); none when no such name."""
    contents = [row["content"] for row in rows.values()]
    words = {word: None for query in queries for word in name_words(query)}
    patterns = [name_pattern(word) for word in words if written_as_a_name(word, contents)]
    return frozenset(
        i
        for i, row in rows.items()
        if row["role"] == "user" and any(pattern.search(row["content"]) for pattern in patterns)
    )


def naming_first(
    ranked: Sequence[tuple[int, int]],
    rows: Iterable[MessageRow],
    queries: Sequence[str],
    leading: Collection[int] = frozenset(),
) -> list[tuple[int, int]]:
    """`ranked` (topic id, message id) with the user's messages naming whom the queries
    name (`named_in`; `rows` are the ranked messages) right after the `leading` messages
    that open it (the standing instructions and preferences), each part in its order,
    when the queries ask for every mention (`asks_for_mentions`); as it was for any
    other question."""
    if not asks_for_mentions(queries):
        return list(ranked)
    named = named_in(queries, {row["id"]: row for row in rows})
    if not named:
        return list(ranked)
    opening = 0
    while opening < len(ranked) and ranked[opening][1] in leading:
        opening += 1
    rest = ranked[opening:]
    return [
        *ranked[:opening],
        *(item for item in rest if item[1] in named),
        *(item for item in rest if item[1] not in named),
    ]
