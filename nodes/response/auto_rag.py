"""Auto-RAG (seed 004): messages from earlier in the current segment relevant to this one.

Hybrid search over the segment's conversation (vectors and BM25, fused by RRF; never a
memory-only answer, so those never quote each other), without the
messages the context already shows (the sliding window, the recalled topics). A hit
counts only when its cosine to the current message reaches `auto_rag_min_similarity`,
it shares a word with the message (a full-text hit) or its cosine reaches the calibrated
message-vector floor (what an unrelated question's best hit reaches 5% of the time), and
it is not a short "ok"/"thanks"; at most `auto_rag_top_k` hits, best first. The caller
skips all this while the segment is no longer than the window.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from core.context import ResponseContext
from core.deps import Deps
from core.records import MEMORY_KIND, MessageRow
from nodes.response.ranking.fusion import rrf_scores
from nodes.response.vector_reads import VectorReads
from nodes.shared.budget import tokens


def relevant_earlier_messages(
    deps: Deps,
    context: ResponseContext,
    text: str,
    segment: int,
    exclude_ids: Collection[int],
    exclude_topic_ids: Collection[int] = (),
    on_screen: Collection[int] = (),
) -> list[MessageRow]:
    """Up to `auto_rag_top_k` earlier messages of `segment` relevant to `text`, best first.

    `exclude_ids` are the messages already in the context (the window, the current one);
    messages of `exclude_topic_ids` are there too, inside the recalled topics. The live
    messages outside `exclude_ids` and `on_screen` are indexed first (`Indexer.catch_up`):
    those may still wait in the vector queue, found by full text alone.
    """
    user_id, limit = context.user_id, context.tuning.auto_rag_search_limit
    vector = deps.embedder.encode_query(text)
    deps.indexer.catch_up(user_id, {*exclude_ids, *on_screen})
    reads = VectorReads(deps.vectors, user_id)
    # Chroma's metadata filter costs time linear in the records it matches (20,000
    # messages: 84 ms against 4 ms unfiltered); a segment holding all the user's messages
    # (no /new yet) needs no filter.
    whole = deps.store.messages.holds_all(user_id, segment)
    where = None if whole else {"segment": segment}
    vector_hits = reads.query("messages", vector, limit, where=where)
    text_hits = deps.store.messages.search(user_id, text, limit, segment=segment)
    scores = rrf_scores(
        [
            [i for i, _ in vector_hits if i not in exclude_ids],
            [i for i, _ in text_hits if i not in exclude_ids],
        ],
        context.tuning.rrf_k,
    )
    if not scores:
        return []
    similarity = dict(vector_hits)
    rows = {row["id"]: row for row in deps.store.messages.by_ids(user_id, list(scores))}
    unscored = [rows[i] for i in scores if i not in similarity and i in rows]
    for message_id, other in reads.message_vectors(deps.embedder, unscored).items():
        similarity[message_id] = float(np.dot(vector, other))
    worded = {i for i, _ in text_hits}
    picked: list[MessageRow] = []
    for message_id in sorted(scores, key=lambda i: -scores[i]):
        row = rows.get(message_id)
        if row is None or row["kind"] != MEMORY_KIND or row["topic_id"] in exclude_topic_ids:
            continue
        cosine = similarity.get(message_id, 0.0)
        if cosine < context.tuning.auto_rag_min_similarity:
            continue
        if message_id not in worded and cosine < context.tuning.message_vector_floor:
            continue
        if tokens(row["content"]) < context.tuning.auto_rag_min_message_tokens:
            continue
        picked.append(row)
        if len(picked) == context.tuning.auto_rag_top_k:
            break
    return picked
