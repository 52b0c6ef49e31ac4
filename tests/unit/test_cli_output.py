"""What people read on an 80-column terminal: tables keep their id and summary columns
however long the message ids, and answers are Markdown rendered, not raw."""

from __future__ import annotations

import io

from rich.console import Console

from cli.output import AnswerPrinter, print_answer, short_id, show_sources, topics_table

LONG = "turn-2202dcbf-5c1e-4a4e-9a57-1f0c2b7e9d41"
SUMMARY = "Marzipan at the vet: the vaccination plan and the diet"


def terminal(width: int = 80) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)


def rendered(console: Console) -> str:
    return console.file.getvalue()  # type: ignore[attr-defined]


def view(topic_id: int) -> dict:
    return {
        "id": topic_id,
        "start_msg_id": LONG,
        "end_msg_id": LONG.replace("turn-2202", "turn-9931"),
        "message_count": 14,
        "first_message_at": "2026-03-05T10:00:00+00:00",
        "summary": SUMMARY,
    }


def test_a_long_message_id_is_shortened_and_a_short_one_kept() -> None:
    assert short_id("m001") == "m001"
    assert short_id(LONG) == "turn-2202dc…"
    assert len(short_id(LONG)) == 12


def test_the_topics_table_keeps_its_columns_at_80_columns_with_long_ids() -> None:
    console = terminal()
    console.print(topics_table([view(101), view(102)], "Topics of user 1"))
    text = rendered(console)

    header = next(line for line in text.splitlines() if "summary" in line)
    for column in ("id", "messages", "n", "date", "summary"):
        assert column in header, header
    assert "101" in text and "102" in text
    assert "turn-2202dc…" in text
    words = " ".join(text.replace("│", " ").split())
    assert "vaccination plan" in words, text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_sources_of_an_answer_keep_topic_and_reason_at_80_columns(monkeypatch) -> None:
    console = terminal()
    monkeypatch.setattr("cli.output.out", console)
    topic = {**view(7), "score": 0.912, "reason": "the vet's advice on Marzipan's diet"}
    show_sources({"topics": [topic], "context_tokens": 900, "llm_calls": 0, "fallback": None})
    text = rendered(console)

    assert "turn-2202dc…" in text
    assert "vet's advice" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_an_answer_is_markdown_rendered_on_a_terminal_and_raw_when_piped() -> None:
    answer = "The vet came on **2026-03-05**:\n\n- `diet`: less fish"
    console = terminal()
    print_answer(answer, console)
    assert "2026-03-05" in rendered(console)
    assert "**" not in rendered(console) and "`" not in rendered(console)

    piped = Console(file=io.StringIO(), width=80, force_terminal=False)
    print_answer(answer, piped)
    assert rendered(piped) == answer + "\n"


def test_a_streamed_answer_is_rendered_as_it_grows_on_a_terminal() -> None:
    console = terminal()
    printer = AnswerPrinter("topica> ", console=console)
    printer.start()
    for end in (5, 20, 40, None):
        printer("Visit on **2026-03-05** and *again* in May"[:end])
    printer.finish("Visit on **2026-03-05** and *again* in May")

    final = rendered(console).split("\x1b[2K")[-1]  # the last frame drawn in place
    assert "Visit on 2026-03-05 and again in May" in final
    assert "*" not in final
