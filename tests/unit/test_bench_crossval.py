"""The leave-one-conversation-out view, on per-conversation figures worked out by hand."""

from __future__ import annotations

import pytest

from bench import crossval


def summaries(table: dict[str, dict[str, tuple[float, int]]]) -> dict:
    """{conversation: {label: (recall, questions)}} → the results' per-conversation shape;
    labels not given score 0."""
    return {
        sample: {
            "methods": {
                crossval.PREFIX + label: {
                    "recall_all_at_budget": by_label.get(label, (0.0, 10))[0],
                    "questions": by_label.get(label, (0.0, 10))[1],
                }
                for label in crossval.GRID
            }
        }
        for sample, by_label in table.items()
    }


def test_each_conversation_is_scored_with_the_variant_best_on_the_others() -> None:
    # "lead_hits=5" is best on a and b, the defaults on c. Held out a: b + c pooled
    # (question-weighted): lead 5 (0.9*10 + 0.5*30)/40 = 0.6, defaults (0.7*10 +
    # 0.6*30)/40 = 0.625 → the defaults, 0.5 on a. Held out b: a + c: lead 5
    # (0.8*20 + 0.5*30)/50 = 0.62, defaults (0.6*20 + 0.6*30)/50 = 0.6 → lead 5, 0.9 on b.
    # Held out c: a + b: lead 5 0.833 vs defaults 0.633 → lead 5, 0.5 on c.
    table = {
        "a": {"defaults": (0.5, 20), "lead_hits=5": (0.8, 20)},
        "b": {"defaults": (0.7, 10), "lead_hits=5": (0.9, 10)},
        "c": {"defaults": (0.6, 30), "lead_hits=5": (0.5, 30)},
    }
    view = crossval.leave_one_out(summaries(table))
    folds = view["folds"]
    assert {sample: fold["chosen"] for sample, fold in folds.items()} == {
        "a": "defaults",
        "b": "lead_hits=5",
        "c": "lead_hits=5",
    }
    assert folds["a"]["chosen_on_others"] == pytest.approx(0.625)
    assert folds["b"]["held_out"] == pytest.approx(0.9)
    assert folds["c"]["held_out"] == pytest.approx(0.5)
    # Question-weighted over the held-out conversations: (0.5*20 + 0.9*10 + 0.5*30)/60.
    assert view["leave_one_out"] == pytest.approx(34 / 60)
    assert view["defaults"] == pytest.approx((0.5 * 20 + 0.7 * 10 + 0.6 * 30) / 60)
    assert view["oracle"] == pytest.approx((0.8 * 20 + 0.9 * 10 + 0.6 * 30) / 60)


def test_ties_go_to_the_defaults_and_the_variants_leave_the_method_tables() -> None:
    table = {sample: {"defaults": (0.5, 10), "lead_hits=0": (0.5, 10)} for sample in "ab"}
    result = {
        "conversations": summaries(table),
        "methods": {"topica": {}, crossval.PREFIX + "defaults": {}},
    }
    for conversation in result["conversations"].values():
        conversation["methods"]["topica"] = {}
    crossval.split_off(result)
    assert {fold["chosen"] for fold in result["cross_validation"]["folds"].values()} == {"defaults"}
    assert list(result["methods"]) == ["topica"]
    assert all(list(c["methods"]) == ["topica"] for c in result["conversations"].values())


def test_the_view_at_each_budget_chooses_on_that_budgets_recall() -> None:
    # At the run's budget the defaults win on every conversation; at 250 tokens
    # "vector_lead=1" does (0.4 against 0.2 on a, 0.3 against 0.1 on b).
    table = {"a": {"defaults": (0.6, 10)}, "b": {"defaults": (0.5, 10)}}
    at_250 = {
        "a": {"defaults": 0.2, "vector_lead=1": 0.4},
        "b": {"defaults": 0.1, "vector_lead=1": 0.3},
    }
    conversations = summaries(table)
    for sample, conversation in conversations.items():
        for label, metrics in conversation["methods"].items():
            recall = at_250[sample].get(label.removeprefix(crossval.PREFIX), 0.0)
            metrics["recall_all_by_budget"] = {"250": recall}
    result = {"budgets": [250], "conversations": conversations, "methods": {}}
    crossval.split_off(result)
    view = result["cross_validation"]
    assert {fold["chosen"] for fold in view["folds"].values()} == {"defaults"}
    low = view["by_budget"]["250"]
    assert {fold["chosen"] for fold in low["folds"].values()} == {"vector_lead=1"}
    assert low["leave_one_out"] == pytest.approx((0.4 + 0.3) / 2)
    assert low["defaults"] == pytest.approx((0.2 + 0.1) / 2)
    assert low["pooled"]["vector_lead=1"] == pytest.approx(low["leave_one_out"])
    assert low["by_conversation"]["a"]["vector_lead=1"] == pytest.approx(0.4)
    assert low["by_conversation"]["b"]["defaults"] == pytest.approx(0.1)


def test_the_transfer_view_scores_one_benchmarks_choice_on_the_other() -> None:
    # On "here" lead_hits=5 pools best ((0.8*20 + 0.9*10)/30); "there" pools the defaults
    # best (0.6) and lead_hits=5 at 0.4 (every other variant scores 0 on both).
    here = crossval.leave_one_out(
        summaries({"a": {"defaults": (0.5, 20), "lead_hits=5": (0.8, 20)},
                   "b": {"defaults": (0.7, 10), "lead_hits=5": (0.9, 10)}})
    )  # fmt: skip
    there = crossval.leave_one_out(
        summaries({"c": {"defaults": (0.6, 10), "lead_hits=5": (0.4, 10)}})
    )
    assert here["pooled"]["lead_hits=5"] == pytest.approx(25 / 30)
    assert crossval.transfer(here, there) == {
        "chosen": "lead_hits=5",
        "chosen_there": pytest.approx(0.4),
        "defaults_there": pytest.approx(0.6),
        "best_there": pytest.approx(0.6),
        "best_label_there": "defaults",
    }


def test_the_key_sentence_view_chooses_and_scores_on_the_key_sentences() -> None:
    # Plain recall_all at 2,000 prefers "passage_chars=300" everywhere (0.7 against 0.6),
    # the key-sentence view prefers the defaults (0.5 against 0.3): the smaller passages
    # count more messages as shown without showing more of what answers.
    plain = {"defaults": 0.6, "passage_chars=300": 0.7}
    key = {"defaults": 0.5, "passage_chars=300": 0.3}
    conversations = summaries({sample: {"defaults": (0.6, 10)} for sample in "ab"})
    for conversation in conversations.values():
        for name, metrics in conversation["methods"].items():
            label = name.removeprefix(crossval.PREFIX)
            metrics["recall_all_by_budget"] = {"2000": plain.get(label, 0.0)}
            metrics["recall_key_by_budget"] = {"2000": key.get(label, 0.0)}
    result = {"budget": 2000, "budgets": [2000], "conversations": conversations, "methods": {}}
    crossval.split_off(result)
    view = result["cross_validation"]
    assert {f["chosen"] for f in view["by_budget"]["2000"]["folds"].values()} == {
        "passage_chars=300"
    }
    keyed = view["key_view"]["2000"]
    assert {fold["chosen"] for fold in keyed["folds"].values()} == {"defaults"}
    assert keyed["leave_one_out"] == pytest.approx(0.5)
    assert keyed["pooled"]["passage_chars=300"] == pytest.approx(0.3)


def test_a_run_without_the_key_sentence_view_has_no_key_view() -> None:
    result = {"budgets": [], "conversations": summaries({"a": {}, "b": {}}), "methods": {}}
    crossval.split_off(result)
    assert "key_view" not in result["cross_validation"]
