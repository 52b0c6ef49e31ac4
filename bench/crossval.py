"""Leave-one-conversation-out view of Topica's tuned weights (`eval locomo --cross-validate`).

The weights that decide which messages of the recalled topics fill a budget
(`ResponseContext.excerpt_*`) were chosen on the dev conversations. To show whether
that choice fits only them, every question is also answered with each variant of
`GRID` (one weight moved at a time around the defaults), and for each conversation
the variant with the best recall_all at the budget on the *other* conversations is
chosen and scored on it. Variants share the graph's run per question (they differ
only in the fill), so the view costs the ranking, not the retrieval, again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.topica import Topica

PREFIX = "cv:"
GRID: dict[str, dict[str, object]] = {
    "defaults": {},
    "vector_weight=0": {"excerpt_vector_weight": 0.0},
    "vector_weight=0.25": {"excerpt_vector_weight": 0.25},
    "vector_weight=0.5": {"excerpt_vector_weight": 0.5},
    "vector_weight=1": {"excerpt_vector_weight": 1.0},
    "neighbour_weight=0.3": {"excerpt_neighbour_weight": 0.3},
    "neighbour_weight=1": {"excerpt_neighbour_weight": 1.0},
    "neighbour_reach=1": {"excerpt_neighbour_reach": 1},
    "neighbour_reach=10": {"excerpt_neighbour_reach": 10},
    "neighbour_hits=10": {"excerpt_neighbour_hits": 10},
    "neighbour_hits=50": {"excerpt_neighbour_hits": 50},
    "lead_hits=0": {"excerpt_lead_hits": 0},
    "lead_hits=5": {"excerpt_lead_hits": 5},
    "vector_lead=1": {"excerpt_vector_lead_hits": 1},
    "vector_lead=2": {"excerpt_vector_lead_hits": 2},
    "vector_lead=3": {"excerpt_vector_lead_hits": 3},
    "named_speakers=off": {"excerpt_named_speakers": False},
    "rules=off": {"excerpt_rule_hits": 0},
    "long_answers=off": {"excerpt_answer_last_chars": 10**9},
    "answer_last_chars=250": {"excerpt_answer_last_chars": 250},
    "answer_last_chars=1000": {"excerpt_answer_last_chars": 1000},
    "long_chars=800": {"excerpt_long_answer_chars": 800},
    "long_chars=1200": {"excerpt_long_answer_chars": 1200},
    "passages=off": {"excerpt_passage_chars": 0},
    "passage_chars=300": {"excerpt_passage_chars": 300},
    "passage_chars=1000": {"excerpt_passage_chars": 1000},
    "long_1200_passage_600": {"excerpt_long_answer_chars": 1200, "excerpt_passage_chars": 600},
    "passages_in_place": {"excerpt_passages_in_place": True},
    "recap=off": {"excerpt_recap_chars": 0},
    "recap_chars=400": {"excerpt_recap_chars": 400},
    "preferences=off": {"excerpt_preference_chars": 0},
    "feedback=off": {"excerpt_feedback_messages": 0},
    "feedback_messages=1": {"excerpt_feedback_messages": 1},
    "feedback_messages=3": {"excerpt_feedback_messages": 3},
    "feedback_weight=0.5": {"excerpt_feedback_weight": 0.5},
    "feedback_weight=2": {"excerpt_feedback_weight": 2.0},
    "preference_chars=600": {"excerpt_preference_chars": 600},
}


def variants() -> list[Topica]:
    """Topica once per grid point, sharing one graph run per question."""
    shared: dict = {}
    return [
        Topica(f"{PREFIX}{label}", context_overrides=overrides, shared_states=shared)
        for label, overrides in GRID.items()
    ]


def leave_one_out(
    conversations: Mapping[str, Any], budget: int | None = None, measure: str = "recall_all"
) -> dict[str, Any]:
    """Per held-out conversation: the variant best on the others, and its recall there.

    `conversations` are the results' per-conversation summaries (with the `cv:` methods).
    Recall on the others is question-weighted (micro), like the overall figures; ties go
    to the grid's order (the defaults first). `pooled` is each variant's recall over all
    the conversations (what another benchmark's choice is scored with, the transfer view),
    `by_conversation` each variant's recall on each (to pool runs split by conversation).
    Recall is at the run's budget, or at `budget` (one of the run's budgets) when given;
    `measure` "recall_key" chooses and scores on the key-sentence view
    (`bench.key_sentence`, `recall_key_by_budget`) instead, at `budget` (required then).
    """

    def recall(sample: str, label: str) -> tuple[float, int]:
        metrics = conversations[sample]["methods"][PREFIX + label]
        if budget is None:
            return metrics[f"{measure}_at_budget"], metrics["questions"]
        return metrics[f"{measure}_by_budget"][str(budget)], metrics["questions"]

    def pooled_recall(samples: list[str], label: str) -> float:
        pairs = [recall(sample, label) for sample in samples]
        return sum(r * n for r, n in pairs) / max(1, sum(n for _, n in pairs))

    folds = {}
    for held_out in conversations:
        others = [sample for sample in conversations if sample != held_out]

        def pooled(label: str, others: list[str] = others) -> float:
            return pooled_recall(others, label)

        chosen = max(GRID, key=lambda label: (pooled(label), -list(GRID).index(label)))
        folds[held_out] = {
            "chosen": chosen,
            "chosen_on_others": pooled(chosen),
            "defaults_on_others": pooled("defaults"),
            "held_out": recall(held_out, chosen)[0],
            "defaults_held_out": recall(held_out, "defaults")[0],
            "best_held_out": max(recall(held_out, label)[0] for label in GRID),
            "questions": recall(held_out, "defaults")[1],
        }
    total = sum(fold["questions"] for fold in folds.values()) or 1

    def weighted(key: str) -> float:
        return sum(fold[key] * fold["questions"] for fold in folds.values()) / total

    everyone = list(conversations)
    return {
        "grid": {label: dict(overrides) for label, overrides in GRID.items()},
        "pooled": {label: pooled_recall(everyone, label) for label in GRID},
        "by_conversation": {
            sample: {label: recall(sample, label)[0] for label in GRID} for sample in everyone
        },
        "folds": folds,
        "leave_one_out": weighted("held_out"),
        "defaults": weighted("defaults_held_out"),
        "oracle": weighted("best_held_out"),
    }


def transfer(chosen_on: Mapping[str, Any], scored_on: Mapping[str, Any]) -> dict[str, Any]:
    """The transfer view between two benchmarks' `cross_validation` views: the variant
    with the best pooled recall on `chosen_on` (ties to the grid's order), and its pooled
    recall on `scored_on` beside `scored_on`'s defaults and its own best variant."""
    labels = [label for label in GRID if label in chosen_on["pooled"]]
    chosen = max(labels, key=lambda label: (chosen_on["pooled"][label], -labels.index(label)))
    there = scored_on["pooled"]
    return {
        "chosen": chosen,
        "chosen_there": there[chosen],
        "defaults_there": there["defaults"],
        "best_there": max(there.values()),
        "best_label_there": max(there, key=there.__getitem__),
    }


KEY_VIEW = "recall_key_by_budget"


def split_off(result: dict[str, Any]) -> None:
    """Moves the variants out of the result's method tables into `cross_validation`, with
    the view at each of the run's budgets in `cross_validation.by_budget`, and the same
    chosen and scored on the key-sentence view in `cross_validation.key_view` (by budget)
    when the run scored it. A passage rule can raise recall_all without showing more of
    the evidence; the key-sentence view is the choice such a rule must also win."""
    result["cross_validation"] = leave_one_out(result["conversations"])
    budgets = result.get("budgets", ())
    result["cross_validation"]["by_budget"] = {
        str(budget): leave_one_out(result["conversations"], budget) for budget in budgets
    }
    if any(KEY_VIEW in m for c in result["conversations"].values() for m in c["methods"].values()):
        result["cross_validation"]["key_view"] = {
            str(budget): leave_one_out(result["conversations"], budget, "recall_key")
            for budget in budgets
        }
    result["methods"] = {
        name: m for name, m in result["methods"].items() if not name.startswith(PREFIX)
    }
    for conversation in result["conversations"].values():
        conversation["methods"] = {
            name: m for name, m in conversation["methods"].items() if not name.startswith(PREFIX)
        }
