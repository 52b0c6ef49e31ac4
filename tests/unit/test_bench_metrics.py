"""Retrieval metrics and context packing, against values worked out by hand."""

from __future__ import annotations

import math

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from bench import metrics
from bench.locomo import split_evidence
from bench.metrics import Unit
from bench.usage import counting_all
from core.callbacks import LLMUsage
from tests.support.bench import tokens_by_hand

UNITS = [
    Unit("t1", ("a", "b", "c")),
    Unit("t2", ("d",)),
    Unit("t3", ("e", "f")),
]
UNIT_OF = {"a": "t1", "b": "t1", "c": "t1", "d": "t2", "e": "t3", "f": "t3"}


def test_count_tokens_is_langchains_approximation() -> None:
    assert metrics.count_tokens("x" * 40) == tokens_by_hand("x" * 40) == 14
    assert metrics.count_tokens("") == 0


def test_recall_at_k_by_membership() -> None:
    assert metrics.ids_at_k(UNITS, 2) == {"a", "b", "c", "d"}
    assert metrics.recall_all(metrics.ids_at_k(UNITS, 1), ["a", "c"]) == 1.0
    assert metrics.recall_all(metrics.ids_at_k(UNITS, 1), ["a", "e"]) == 0.0
    assert metrics.recall_any(metrics.ids_at_k(UNITS, 1), ["a", "e"]) == 1.0
    assert metrics.recall_any(metrics.ids_at_k(UNITS, 2), ["e", "f"]) == 0.0
    assert metrics.evidence_fraction(metrics.ids_at_k(UNITS, 2), ["a", "d", "e", "f"]) == 0.5


def test_ndcg_gain_is_new_evidence_per_unit_and_ideal_uses_the_methods_own_units() -> None:
    # Evidence a, b (unit t1) and e (unit t3). Ranking t2, t3, t1:
    # DCG = 0/log2(2) + 1/log2(3) + 2/log2(4) = 0.6309 + 1.0
    # ideal: t1 (2) then t3 (1) = 2/log2(2) + 1/log2(3) = 2.6309
    ranking = [UNITS[1], UNITS[2], UNITS[0]]
    expected = (1 / math.log2(3) + 2 / math.log2(4)) / (2 + 1 / math.log2(3))
    assert metrics.ndcg_at_k(ranking, ["a", "b", "e"], UNIT_OF, 10) == pytest.approx(expected)
    assert metrics.ndcg_at_k(UNITS, ["a", "b"], UNIT_OF, 10) == pytest.approx(1.0)
    # Cut at k=1: only t2 counts, nothing relevant in it.
    assert metrics.ndcg_at_k(ranking, ["a", "b", "e"], UNIT_OF, 1) == 0.0
    # A message seen in a higher unit is not gained again: 1 + 1/log2(3) over the same ideal.
    overlapping = [Unit("u1", ("e",)), Unit("u2", ("e", "a"))]
    overlapping_unit_of = {"e": "u1", "a": "u2"}
    assert metrics.ndcg_at_k(overlapping, ["a", "e"], overlapping_unit_of, 10) == pytest.approx(1.0)


def test_pack_keeps_the_longest_prefix_within_the_budget() -> None:
    lines = {key: f"{key}: " + "w" * 30 for key in "abcdef"}  # 33 characters each
    units = {unit.key: unit for unit in UNITS}
    fill = metrics.whole_units(UNITS)
    # Units render as blocks of lines; blocks are joined by a blank line.
    first_two = lines["a"] + "\n" + lines["b"]
    budget = tokens_by_hand(first_two)
    packed = metrics.pack(fill, units, lines, budget)
    assert packed.message_ids == {"a", "b"}
    assert packed.tokens == budget
    assert packed.units == 1
    whole_t1_and_d = "\n".join(lines[i] for i in "abc") + "\n\n" + lines["d"]
    packed = metrics.pack(fill, units, lines, tokens_by_hand(whole_t1_and_d))
    assert packed.message_ids == {"a", "b", "c", "d"}
    assert packed.units == 2
    assert metrics.pack(fill, units, lines, 3).message_ids == frozenset()


def test_a_unit_in_part_shows_its_excerpt_header_and_lines_in_unit_order() -> None:
    unit = Unit("t", ("a", "b", "c"), header="=== Topic t ===\nsummary", excerpt_header="== t ==")
    lines = {"a": "A", "b": "B", "c": "C"}
    assert metrics.render([("t", "c"), ("t", "a")], {"t": unit}, lines) == "== t ==\nA\nC"
    assert (
        metrics.render(metrics.whole_units([unit]), {"t": unit}, lines)
        == "=== Topic t ===\nsummary\nA\nB\nC"
    )


def test_malformed_evidence_is_split_where_possible_and_reported() -> None:
    valid, malformed = split_evidence(["D8:6; D9:17", "D1:3", "D1:3", "nonsense", "D2"])
    assert valid == ["D8:6", "D9:17", "D1:3"]
    assert malformed == ["D8:6; D9:17", "nonsense", "D2"]
    assert split_evidence([]) == ([], [])


def test_percentile_interpolates() -> None:
    assert metrics.percentile([4, 1, 3, 2], 50) == 2.5
    assert metrics.percentile([1, 2, 3, 4, 5], 95) == pytest.approx(4.8)
    assert metrics.percentile([], 50) is None


async def test_counting_all_counts_model_calls_made_without_the_handler_in_config() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("one"), AIMessage("two")]))
    usage = LLMUsage()
    with counting_all(usage):
        await model.ainvoke("hello")
        await model.ainvoke("again")
    await GenericFakeChatModel(messages=iter([AIMessage("x")])).ainvoke("outside")
    assert usage.calls == 2
