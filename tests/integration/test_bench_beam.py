"""`eval beam` end to end on a small BEAM-shaped conversation made here (real SQLite,
Chroma, USE): the shared harness reads BEAM's layout, stores both roles at their batches'
dates without the generation markers, scores the evidence ids by question type and
scores the abstention questions as whether a method recalled nothing."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from bench.baselines import MessageLevel, Retrieval
from bench.beam import BEAM, load_conversations
from bench.corpus import Corpus
from bench.harness import default_methods, evaluate
from bench.terminal import show_eval
from cli.main import main
from tests.support.bench import FixedOrder

pytestmark = pytest.mark.timeout(240)

BATCH_1 = [
    ("user", "I adopted a grey cat called Pixel from the shelter. ->-> 1,1"),
    (
        "assistant",
        "Congratulations on adopting Pixel! Give her a quiet room, a litter box, "
        "fresh water and a hiding place; shelter cats often need a week or two to settle.",
    ),
    ("user", "She loves the feather toy more than anything. ->-> 1,2"),
    (
        "assistant",
        "Feather wands are great for play: ten minutes twice a day keeps an indoor "
        "cat fit, and put the toy away after play so she does not chew the feathers.",
    ),
]
BATCH_2 = [
    ("user", "I joined the Riverside rowing club and we race on June 14. ->-> 2,1"),
    (
        "assistant",
        "That is exciting! For a first race, build endurance with steady pieces "
        "and practise starts; taper the training in the last week before June 14.",
    ),
    ("user", "Change of plan: the race moved to June 21. ->-> 2,2"),
    ("assistant", "Noted, the race is now on June 21, so you have one more week of training."),
]
QUESTIONS = {
    "information_extraction": [
        {"question": "What toy does my cat love?", "answer": "the feather toy",
         "source_chat_ids": [2]},
    ],
    "knowledge_update": [
        {"question": "When is my rowing race?", "answer": "June 21",
         "source_chat_ids": {"original_info": [4], "updated_info": [6]}},
    ],
    "summarization": [
        {"question": "Summarise my cat's first weeks.", "ideal_summary": "...",
         "source_chat_ids": [0, 1, 2]},
    ],
    "abstention": [
        {"question": "What did my doctor say about my knee?", "ideal_response": "nothing",
         "source_chat_ids": None},
        {"question": "Which car did I buy last year?", "ideal_response": "nothing"},
    ],
}  # fmt: skip

# Newest first, one message per unit.
FIXED_ORDER = ["7", "6", "5", "4", "3", "2", "1", "0"]


def beam_folder(root: Path) -> Path:
    """`<root>/100K/1/chat.json` and its probing questions, as BEAM lays them out."""

    def batch(number: int, anchor: str, lines: list[tuple[str, str]], first: int) -> dict:
        messages = [
            {"role": role, "id": first + index, "content": text}
            for index, (role, text) in enumerate(lines)
        ]
        messages[0]["time_anchor"] = anchor
        turns = [messages[i : i + 2] for i in range(0, len(messages), 2)]
        return {"batch_number": number, "time_anchor": None, "turns": turns}

    folder = root / "100K" / "1"
    (folder / "probing_questions").mkdir(parents=True)
    chat = [batch(1, "March-15-2024", BATCH_1, 0), batch(2, "April-20-2024", BATCH_2, 4)]
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    questions = folder / "probing_questions" / "probing_questions.json"
    questions.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return root


class Silent(MessageLevel):
    """Recalls nothing, whatever is asked."""

    name = "silent"

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        return Retrieval([])


def test_the_folder_is_read_with_real_roles_dates_and_no_markers(tmp_path: Path) -> None:
    conversation = load_conversations(beam_folder(tmp_path))[0]
    assert conversation.sample_id == "100K/1"
    messages = conversation.messages
    assert [m["role"] for m in messages] == ["user", "assistant"] * 4
    assert messages[0]["content"] == "I adopted a grey cat called Pixel from the shelter."
    assert not any("->->" in m["content"] for m in messages)
    assert messages[0]["created_at"] == "2024-03-15T09:00:00"
    assert messages[3]["created_at"] == "2024-03-15T09:03:00"
    assert messages[4]["created_at"] == "2024-04-20T09:00:00"
    assert conversation.sessions == {"session_1": ["0", "1", "2", "3"],
                                     "session_2": ["4", "5", "6", "7"]}  # fmt: skip
    evidence = {q.category: q.evidence for q in conversation.questions}
    assert evidence["knowledge_update"] == ["4", "6"]
    assert evidence["abstention"] == []
    assert load_conversations(tmp_path, {"100K/2"}) == []


async def test_fixed_rankings_score_by_question_type_and_abstention(
    make_settings, tmp_path: Path
) -> None:
    result = await evaluate(
        BEAM,
        beam_folder(tmp_path / "beam"),
        None,
        2000,
        [1, 2],
        None,
        make_settings(tmp_path / "unused"),
        budgets=[2000],
        methods=lambda: [FixedOrder(FIXED_ORDER), Silent()],
        console=Console(quiet=True),
    )
    assert result["benchmark"] == "BEAM"
    fixed, silent = result["methods"]["fixed"], result["methods"]["silent"]
    assert fixed["questions"] == silent["questions"] == 3
    assert fixed["questions_by_category"] == {
        "information_extraction": 1,
        "knowledge_update": 1,
        "summarization": 1,
    }
    # Evidence "2" is the 6th unit, "4" and "6" the 4th and 2nd, "0-2" reach the 8th.
    assert fixed["recall_all_at_5"] == pytest.approx(1 / 3)
    assert fixed["recall_all_at_10"] == 1.0
    assert fixed["recall_all_at_budget_by_category"] == {
        "information_extraction": 1.0,
        "knowledge_update": 1.0,
        "summarization": 1.0,
    }
    assert fixed["abstention"] == {"questions": 2, "recalled_nothing": 0.0}
    assert fixed["turned_away"] == 0.0
    assert silent["abstention"] == {"questions": 2, "recalled_nothing": 1.0}
    assert silent["turned_away"] == 1.0 and silent["recall_all_at_budget"] == 0.0
    assert result["evidence"]["questions"] == 3
    assert result["setup"]["grouping"] == "question type"
    ingest = result["conversations"]["100K/1"]["ingest"]
    assert ingest["messages"] == 8 and ingest["sessions"] == 2


def test_eval_beam_on_the_command_line_reports_every_method(tmp_path: Path) -> None:
    data, out = beam_folder(tmp_path / "beam"), tmp_path / "out"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        command = ["eval", "beam", "--data", str(data), "--conversations", "100K/1"]
        assert main([*command, "--budget", "500", "--out", str(out), "--json"]) == 0
    result = json.loads(stdout.getvalue())
    assert set(result["methods"]) == {method.name for method in default_methods()}
    for name, metrics in result["methods"].items():
        assert metrics["questions"] == 3, name
        assert set(metrics["recall_all_by_budget"]) >= {"250", "500", "2000", "8000"}
        # The key-sentence view is at most the plain one, and a baseline never cuts.
        key, plain = metrics["recall_key_by_budget"], metrics["recall_all_by_budget"]
        assert set(key) == set(plain)
        assert all(key[b] <= plain[b] for b in plain), name
        if not name.startswith("topica"):
            assert key == plain, name
        assert set(metrics["recall_all_at_budget_by_category"]) == {
            "information_extraction",
            "knowledge_update",
            "summarization",
        }
        assert metrics["abstention"]["questions"] == 2
    # A baseline always quotes something; everything fits 8,000 tokens for full context.
    assert result["methods"]["message_rag"]["abstention"]["recalled_nothing"] == 0.0
    assert result["methods"]["full_context"]["recall_all_by_budget"]["8000"] == 1.0
    report = (out / "report.md").read_text()
    assert report.startswith("# BEAM retrieval evaluation")
    assert "## Abstention" in report and "by question type" in report
    assert "key-sentence view" in report.lower()
    assert (out / "recall_by_budget.png").stat().st_size > 0
    terminal = io.StringIO()
    show_eval(result, Console(file=terminal, width=200))
    assert "BEAM retrieval (recall_all at 500 tokens" in terminal.getvalue()


def test_eval_beam_refuses_a_missing_folder_and_unknown_conversations(
    tmp_path: Path, capsys
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["eval", "beam", "--data", str(missing)]) == 2
    assert capsys.readouterr().err == f"topica: error: {missing}: no such folder\n"
    data = beam_folder(tmp_path / "beam")
    assert main(["eval", "beam", "--data", str(data), "--conversations", "100K/9"]) == 2
    assert "100K/9" in capsys.readouterr().err
