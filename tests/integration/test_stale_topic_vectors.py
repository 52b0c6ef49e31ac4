"""An edited message's topic is not found through its summary's vector by the old words.

A topic's vector is made from its summary, written from the messages as they were; until
the memory worker summarises the topic again, the search leaves that vector out (as
full-text search leaves the summary out), and the edited message is found by its new
words.
"""

from __future__ import annotations

from app.memory import archive_user
from core.context import ResponseContext
from core.deps import Deps
from nodes.response.hits import TOPIC_KINDS, find_hits
from tests.support.messages import new_messages

USER = 1
OLD = "The code of my gym locker is 4417, the one by the sauna door."
NEW = "The code of my gym locker is 9023, the one by the sauna door."
OLD_QUERY = "gym locker code 4417"


async def test_a_stale_topics_vector_is_not_searched_until_it_is_summarised_again(deps: Deps):
    deps.indexer.store_messages(
        USER,
        new_messages([OLD, "Noted: locker 4417 by the sauna door.", "Thanks, see you at the gym."]),
    )
    await archive_user(deps, USER, archive_all=True)
    [topic] = deps.store.topics.all_of(USER)
    [locker] = [m for m in deps.store.messages.all_of(USER) if m["content"] == OLD]
    context = ResponseContext.from_settings(deps.settings, user_id=USER)

    def topic_vector_hits(query: str) -> list[int]:
        [found] = find_hits(deps, context, [query], TOPIC_KINDS).vectors["topics"]
        return [topic_id for topic_id, _ in found]

    assert topic_vector_hits(OLD_QUERY) == [topic["id"]]

    deps.store.messages.rewrite(USER, locker["id"], NEW, edit=True)
    deps.indexer.index(USER, "messages")

    assert topic_vector_hits(OLD_QUERY) == [], "the stale summary's vector is left out"
    hits = find_hits(deps, context, ["gym locker code 9023"], TOPIC_KINDS)
    assert locker["id"] in hits.message_text[0], "the message is found by its new words"
    assert locker["id"] in [i for i, _ in hits.vectors["messages"][0]]

    deps.store.topics.resummarise(USER, topic["id"], "The gym locker by the sauna door: 9023.")
    deps.indexer.index(USER, "topics")
    assert topic_vector_hits("gym locker code 9023") == [topic["id"]]
