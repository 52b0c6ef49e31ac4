"""The hybrid peers of the evaluation (seed 004's auto-RAG over all messages), on a fixed
vector list and a fixed BM25 list whose fusion is worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bench.baselines import HybridMessages, HybridNeighbours
from bench.corpus import Corpus
from bench.locomo import Conversation
from bench.metrics import pack
from tests.support.bench import tokens_by_hand

# Messages m1..m6 are rows 1..6 in conversation order.
BY_VECTOR = [(3, 0.9), (1, 0.8), (2, 0.7)]
BY_TEXT = [(2, 5.0), (4, 4.0)]


class FixedIndex:
    """Answers every query with the same lists, and records the depth asked for."""

    def __init__(self) -> None:
        self.depths: list[int] = []

    def query(self, kind, user_id, vector, limit):
        self.depths.append(limit)
        return BY_VECTOR[:limit]

    def search(self, user_id, text, limit):
        self.depths.append(limit)
        return BY_TEXT[:limit]


def corpus_of(index: FixedIndex) -> Corpus:
    order = [f"m{i}" for i in range(1, 7)]
    deps = SimpleNamespace(
        embedder=SimpleNamespace(encode_query=lambda text: np.ones(2, np.float32)),
        vectors=index,
        store=SimpleNamespace(messages=index),
    )
    return Corpus(
        deps=deps,
        user_id=1,
        conversation=Conversation("conv-h", ("Ann", "Bob"), [], {}, []),
        order=order,
        rows={external: {"id": number} for number, external in enumerate(order, start=1)},
        lines={external: f"{external}: " + "w" * 30 for external in order},
        message_vectors=np.zeros((6, 2), np.float32),
    )


async def test_hybrid_messages_fuses_vectors_and_bm25_with_k_60() -> None:
    index = FixedIndex()
    retrieval = await HybridMessages().retrieve(corpus_of(index), "question")
    # m2: 1/63 + 1/61 = 0.03226; m3: 1/61 = 0.01639; m1 and m4: 1/62 each (the vector
    # list's m1 first). m5 and m6 are in neither list.
    assert [unit.key for unit in retrieval.units] == ["m2", "m3", "m1", "m4"]
    assert [unit.message_ids for unit in retrieval.units] == [("m2",), ("m3",), ("m1",), ("m4",)]
    assert index.depths == [6, 6]  # both lists as deep as the conversation


async def test_hybrid_neighbours_shows_each_hit_then_the_messages_beside_it() -> None:
    corpus = corpus_of(FixedIndex())
    method = HybridNeighbours()
    retrieval = await method.retrieve(corpus, "question")
    assert [unit.message_ids for unit in retrieval.units] == [
        ("m1", "m2", "m3"),
        ("m2", "m3", "m4"),
        ("m1", "m2"),
        ("m3", "m4", "m5"),
    ]
    # Hit m2, its neighbours m1 and m3; hit m3 (shown) brings m4; hit m1 nothing new;
    # hit m4 brings m5.
    assert retrieval.fill == [
        ("around:m2", "m2"),
        ("around:m2", "m1"),
        ("around:m2", "m3"),
        ("around:m3", "m4"),
        ("around:m4", "m5"),
    ]
    assert method.graded is False
    # Under a budget of the first block (m1..m3 in order) plus m4's block, m5 is left out.
    by_key = {unit.key: unit for unit in retrieval.units}
    lines = corpus.lines
    text = "\n".join(lines[i] for i in ("m1", "m2", "m3")) + "\n\n" + lines["m4"]
    packed = pack(retrieval.fill, by_key, lines, tokens_by_hand(text))
    assert packed.message_ids == {"m1", "m2", "m3", "m4"}
    assert packed.units == 2
