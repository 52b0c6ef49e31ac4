"""The LoCoMo harness end to end on a tiny hand-made conversation (real SQLite, Chroma, USE).

A fixed-order method makes every metric computable by hand; the real methods run
beside it to prove the run, the outputs and the topic-to-message mapping.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from bench import crossval
from bench.baselines import MessageLevel, Retrieval
from bench.corpus import Corpus
from bench.eval_locomo import default_methods, eval_locomo
from bench.key_sentence import key_sentence, recall_key
from bench.locomo import Conversation, load_conversations
from bench.metrics import Unit, count_tokens
from bench.report import fraction, markdown_report
from bench.topica import Topica
from core.text import transcript
from nodes.response.excerpts import relevant_excerpts
from tests.support.bench import tokens_by_hand

SESSION_1 = [
    ("Ann", "I adopted a grey cat called Pixel from the shelter yesterday."),
    ("Bob", "Congratulations! How is Pixel settling in?"),
    ("Ann", "She hides under the sofa, but she loves the feather toy."),
    ("Bob", "Give her a week, cats need time in a new home."),
]
SESSION_2 = [
    ("Bob", "I started rowing on the river every Saturday morning."),
    ("Ann", "Rowing sounds hard. Do you train with a club?"),
    ("Bob", "Yes, the Riverside club, we race in June."),
    ("Ann", "Good luck with the race in June!"),
]
QUESTIONS = [
    {"question": "What toy does Pixel love?", "answer": "feather", "evidence": ["D1:3"],
     "category": 4},
    {"question": "Which pets and sports come up?", "answer": "cat, rowing",
     "evidence": ["D1:1; D2:2"], "category": 1},
    {"question": "When was the party?", "answer": "never", "evidence": ["D9:9"], "category": 2},
    {"question": "Is Ann a pilot?", "adversarial_answer": "no", "evidence": ["D1:1"],
     "category": 5},
    {"question": "What is Ann like?", "answer": "kind", "evidence": [], "category": 3},
    {"question": "When is Bob's race?", "answer": "June", "evidence": ["D2:4", "D3:1"],
     "category": 4},
]  # fmt: skip

# Newest first, one message per unit.
FIXED_ORDER = ["D2:4", "D2:3", "D2:2", "D2:1", "D1:4", "D1:3", "D1:2", "D1:1"]


def locomo_file(path: Path) -> Path:
    def turns(session: int, lines: list[tuple[str, str]]) -> list[dict]:
        return [
            {"speaker": speaker, "dia_id": f"D{session}:{index}", "text": text}
            for index, (speaker, text) in enumerate(lines, start=1)
        ]

    data = [
        {
            "sample_id": "conv-t",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:00 pm on 1 May, 2023",
                "session_1": turns(1, SESSION_1),
                "session_2_date_time": "2:00 pm on 8 May, 2023",
                "session_2": turns(2, SESSION_2),
            },
            "qa": QUESTIONS,
        }
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


class FixedOrder(MessageLevel):
    """Every question gets the same ranking: one message per unit, newest first."""

    name = "fixed"

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        return Retrieval([Unit(i, (i,)) for i in FIXED_ORDER])


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    return locomo_file(tmp_path / "locomo.json")


async def test_metrics_of_a_fixed_ranking_match_the_hand_computation(
    data_file: Path, make_settings, tmp_path: Path
) -> None:
    conversation = load_conversations(data_file)[0]
    lines = {
        message["external_id"]: transcript([_row(message)]) for message in conversation.messages
    }
    # A budget that holds exactly the first three units (blocks joined by a blank line).
    budget = tokens_by_hand("\n\n".join(lines[i] for i in FIXED_ORDER[:3]))
    progress = io.StringIO()
    result = await eval_locomo(
        data_file,
        None,
        budget,
        [5, 10],
        None,
        make_settings(tmp_path / "unused"),
        budgets=[budget],
        methods=lambda: [FixedOrder()],
        console=Console(file=progress, force_terminal=False),
    )
    # Piped, the progress is a line per task with its totals: archiving, questions, overall.
    lines = progress.getvalue().splitlines()
    sample = conversation.sample_id
    assert any(line.startswith("archiving: ") and "messages (100%)" in line for line in lines)
    assert any(line.startswith(f"{sample}: questions: 5/5 questions (100%)") for line in lines)
    assert any(line.startswith(f"conversations: {sample}: 1/1 conversations") for line in lines)
    fixed = result["methods"]["fixed"]
    # Evaluated: D1:3 (rank 6), D1:1 + D2:2 (ranks 8 and 3), D2:4 (rank 1; D3:1 unknown).
    assert fixed["questions"] == 3
    assert fixed["recall_all_at_5"] == pytest.approx(1 / 3)  # only the D2:4 question
    assert fixed["recall_any_at_5"] == pytest.approx(2 / 3)  # ...and the one with D2:2
    assert fixed["recall_all_at_10"] == pytest.approx(1.0)
    ndcg = [
        (1 / math.log2(7)) / 1,
        (1 / math.log2(4) + 1 / math.log2(9)) / (1 + 1 / math.log2(3)),
        1.0,
    ]
    assert fixed["ndcg_at_10"] == pytest.approx(sum(ndcg) / 3)
    # The budget holds D2:4, D2:3, D2:2.
    assert fixed["recall_all_at_budget"] == pytest.approx(1 / 3)
    assert fixed["recall_any_at_budget"] == pytest.approx(2 / 3)
    assert fixed["evidence_recall_at_budget"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert fixed["mean_tokens_at_budget"] == budget
    assert fixed["recall_all_at_budget_by_category"] == {"1": 0.0, "4": 0.5}
    assert result["evidence"] == {
        "questions": 5,
        "evaluated": 3,
        "malformed_entries": 1,
        "questions_with_malformed": 1,
        "unknown_ids": 2,
        "without_evidence": 2,
    }
    ingest = result["conversations"]["conv-t"]["ingest"]
    assert ingest["messages"] == 8
    assert ingest["sessions"] == 2
    assert ingest["topics"] >= 1
    assert ingest["llm_calls"] == 0


async def test_the_full_run_reports_every_method_and_writes_the_outputs(
    data_file: Path, make_settings, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = await eval_locomo(
        data_file,
        ["conv-t"],
        2000,
        [5, 10],
        out,
        make_settings(tmp_path / "unused"),
        budgets=[250, 2000],
        console=Console(quiet=True),
    )
    assert set(result["methods"]) == {method.name for method in default_methods()}
    assert {
        "topica",
        "message_rag",
        "bm25",
        "hybrid_messages",
        "hybrid_neighbours",
        "session",
        "full_context",
    } <= set(result["methods"])
    required = {
        "recall_all_at_budget",
        "recall_all_at_5",
        "recall_all_at_10",
        "recall_any_at_5",
        "ndcg_at_10",
        "mean_tokens",
        "p50_ms",
        "p95_ms",
    }
    for name, metrics in result["methods"].items():
        assert required <= metrics.keys(), name
        assert metrics["questions"] == 3
    assert result["budget"] == 2000
    assert result["methods"]["topica"]["llm_calls_per_question"] == 0
    # Two Topica rows, three questions: no model, so the search order decides for every
    # one. (With fixed floors, those of memories of hundreds of messages, one question of
    # this eight-message memory stayed under them all: "no_candidates" twice. The floors of
    # a memory this size let it through, nodes.response.ranking.floors.SizeCurve.)
    assert result["rerank_fallbacks"] == {"no_model": 6}
    assert result["methods"]["full_context"]["recall_all_at_budget"] == 1.0
    assert result["methods"]["session"]["recall_all_at_budget"] == 1.0
    assert result["methods"]["full_context"]["recall_all_at_5"] is None
    # The neighbours' units depend on the question: recall@k, but no NDCG.
    neighbours = result["methods"]["hybrid_neighbours"]
    assert neighbours["ndcg_at_10"] is None and neighbours["recall_all_at_5"] is not None
    assert result["methods"]["hybrid_messages"]["ndcg_at_10"] is not None
    for name in ("report.md", "results.json", "recall_by_budget.png", "latency.png"):
        assert (out / name).stat().st_size > 0
    assert json.loads((out / "results.json").read_text())["budget"] == 2000
    report = (out / "report.md").read_text()
    assert "| Topica |" in report
    # The memory-only answer's quotes: Topica's alone. Eight short messages are well
    # within the quotes' budget, so it quotes every message of the topics it recalled,
    # as the 2,000-token fill holds them all.
    topica = result["methods"]["topica"]
    assert topica["recall_all_quoted"] == topica["recall_all_at_budget"] > 0
    assert {n for n, m in result["methods"].items() if m["recall_all_quoted"] is not None} == {
        "topica"
    }
    assert "## Topica: the memory-only answer" in report
    quoted = fraction(topica["recall_all_quoted"])
    assert f"| conv-t | 3 | {quoted} |" in report and f"| **all** | 3 | {quoted} |" in report


async def test_unknown_conversations_are_refused(
    data_file: Path, make_settings, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="conv-x"):
        await eval_locomo(
            data_file, ["conv-x"], 2000, [5], None, make_settings(tmp_path), budgets=[2000]
        )


async def test_topics_map_to_their_members_not_to_their_range(deps, make_messages) -> None:
    messages = make_messages([f"message number {i}" for i in range(1, 7)])
    rows = deps.indexer.store_messages(1, messages)
    ids = [row["id"] for row in rows]
    first, middle, last = deps.store.topics.save(
        1, [("first", ids[0:2]), ("middle", ids[2:4]), ("last", ids[4:6])]
    )
    # Merging widens the first topic's range over the middle topic's messages.
    merged = deps.store.topics.merge(1, last["id"], first["id"], "first and last")
    assert (merged["start_msg_id"], merged["end_msg_id"]) == (ids[0], ids[5])
    conversation = Conversation("conv-m", ("Alexei", "Topica"), messages, {}, [])
    corpus = await Corpus.load(deps, 1, conversation)
    method = Topica()
    await method.prepare(corpus)
    unit_of = method.unit_of(corpus)
    assert [i for i in corpus.order if unit_of[i] == f"topic:{first['id']}"] == [
        "m1",
        "m2",
        "m5",
        "m6",
    ]
    assert unit_of["m3"] == unit_of["m4"] == f"topic:{middle['id']}"
    retrieval = await method.retrieve(corpus, "message number 5")
    by_key = {unit.key: unit.message_ids for unit in retrieval.units}
    assert by_key[f"topic:{first['id']}"] == ("m1", "m2", "m5", "m6")


def _row(message) -> dict:
    return {**message, "id": 0, "author": message.get("author")}


async def test_cross_validation_scores_variants_through_the_same_retrieval(
    data_file: Path, make_settings, tmp_path: Path
) -> None:
    result = await eval_locomo(
        data_file,
        None,
        2000,
        [5],
        None,
        make_settings(tmp_path / "unused"),
        budgets=[250, 2000],
        methods=lambda: [Topica()],
        console=Console(quiet=True),
        cross_validate=True,
    )
    assert list(result["methods"]) == ["topica"]  # the variants are not method rows
    view = result["cross_validation"]
    assert set(view["grid"]) == set(crossval.GRID)
    (fold,) = view["folds"].values()
    # The defaults variant is Topica itself, on the graph state the variants share.
    assert fold["defaults_held_out"] == result["methods"]["topica"]["recall_all_at_budget"]
    assert fold["questions"] == 3
    # Topica's own (not the variants'), every question over the floors as above.
    assert result["rerank_fallbacks"] == {"no_model": 3}
    # The same view chosen and scored on the key-sentence view, from the variants' own rows.
    (key_fold,) = view["key_view"]["2000"]["folds"].values()
    topica = result["methods"]["topica"]
    assert key_fold["defaults_held_out"] == topica["recall_key_by_budget"]["2000"]
    report = markdown_report(result)
    assert "## Leave one conversation out" in report and "| conv-t | 3 | defaults |" in report
    assert "Chosen and scored on the key-sentence view instead: leave-one-out" in report


async def test_topicas_context_at_a_budget_is_what_the_response_graphs_fill_shows(
    deps, make_messages
) -> None:
    """The bench scores the messages `relevant_excerpts` (assemble's fill) would show of
    the same topics, within the budget as `count_tokens` counts it."""
    long = " ".join(f"Sentence {i} is about the harbour ferry timetable." for i in range(60))
    messages = make_messages(
        ["When does the ferry leave?", long, "I booked a cabin.", "The ferry leaves at six."]
    )
    rows = deps.indexer.store_messages(1, messages)
    ids = [row["id"] for row in rows]
    deps.store.topics.save(1, [("ferry", ids[0:2]), ("cabin", ids[2:4])])
    corpus = await Corpus.load(deps, 1, Conversation("conv-f", ("A", "B"), messages, {}, []))
    method = Topica()
    await method.prepare(corpus)
    retrieval = await method.retrieve(corpus, "When does the ferry leave?")
    assert retrieval.fit is not None
    fit = retrieval.fit
    packs = fit([60, 200, 400, 5_000])
    for budget, packed in packs.items():
        assert packed.tokens <= budget
        chars = (budget - 3) * 4
        topic_ids, excerpts = relevant_excerpts(
            deps.store, 1, [t for t, _ in fit.members], fit.recall, fit.ranking, chars
        )
        shown = {
            corpus.external_of[m["id"]]
            for t in topic_ids
            for m in deps.store.messages.of_topic(1, t)
            if t not in excerpts
            or transcript([m]).split("]: ", 1)[1][:30] in excerpts[t]
            or (m["content"] == long and "Sentence" in excerpts[t])
        }
        assert packed.message_ids == shown, budget
    assert "m2" not in packs[60].message_ids
    assert packs[5_000].message_ids == {"m1", "m2", "m3", "m4"}
    # A budget between holds the long message by a passage, not whole.
    assert "m2" in packs[400].message_ids and packs[400].tokens < count_tokens(long)
    # The key-sentence view sees that passage: of two sentences of the message, the one
    # shown counts and the one cut away does not; shown whole, both count.
    unit_of = dict(method.unit_of(corpus))
    shown_text = packs[400].excerpts[unit_of["m2"]]
    numbers = [i for i in range(60) if f"Sentence {i} is" in shown_text]
    hidden = next(i for i in range(60) if i not in numbers)
    for number, expected in ((numbers[-1], 1.0), (hidden, 0.0)):
        key = key_sentence(long, "When does the ferry leave?", f"Sentence {number}")
        assert key == f"Sentence {number} is about the harbour ferry timetable."
        keys = {"m2": key}
        assert recall_key(packs[400], ["m2"], keys, unit_of) == expected, number
        assert recall_key(packs[5_000], ["m2"], keys, unit_of) == 1.0
        assert recall_key(packs[60], ["m2"], keys, unit_of) == 0.0
