"""The one progress helper: bars with totals on a terminal, periodic lines elsewhere."""

from __future__ import annotations

import io

from rich.console import Console

from core.progress import ProgressBoard, progress_board


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def piped_board(clock: Clock, interval_s: float = 10.0) -> tuple[ProgressBoard, io.StringIO]:
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=False, width=60)
    return ProgressBoard(console, interval_s, clock), sink


def test_off_a_terminal_a_task_writes_a_line_every_interval_and_when_done() -> None:
    clock = Clock()
    board, sink = piped_board(clock)
    task = board.task("archiving", total=100, unit="messages")
    assert sink.getvalue() == "", "nothing is written when a task starts"
    for _ in range(9):
        clock.now += 2.5
        task.advance(10)
    lines = sink.getvalue().splitlines()
    # 22.5 s of work: a line at 10 s and at 20 s, each with totals, rate and time left.
    assert len(lines) == 2
    assert lines[0].startswith("archiving: 40/100 messages (40%), 4.0 messages/s, 0:00:10")
    assert "about 0:00:15 left" in lines[0]
    assert lines[1].startswith("archiving: 80/100 messages (80%)")
    clock.now += 2.5
    task.advance(10)
    task.finish()
    lines = sink.getvalue().splitlines()
    assert len(lines) == 3, "the last line is written once"
    assert lines[2].startswith("archiving: 100/100 messages (100%)")
    assert "0:00:25 elapsed" in lines[2] and "left" not in lines[2]


def test_lines_are_not_wrapped_and_carry_the_current_description() -> None:
    clock = Clock()
    board, sink = piped_board(clock, interval_s=1)
    task = board.task("questions", total=760, unit="questions")
    task.update(description="conv-26: questions, a long description that passes 60 columns")
    clock.now += 1
    task.advance(150)
    (line,) = sink.getvalue().splitlines()
    assert line.startswith("conv-26: questions, a long description that passes 60 columns: 150/760")


def test_a_task_without_a_total_counts_without_a_percentage() -> None:
    clock = Clock()
    board, sink = piped_board(clock, interval_s=5)
    task = board.task("building", unit="topics")
    clock.now += 6
    task.advance(12)
    task.finish()
    lines = sink.getvalue().splitlines()
    assert lines[0].startswith("building: 12 topics, ")
    assert "%" not in lines[0]
    assert len(lines) == 2


def test_on_a_terminal_each_task_is_a_bar_with_its_totals_and_no_lines() -> None:
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=120)
    with progress_board(console) as board:
        assert board.live
        task = board.task("archiving", total=196, unit="messages")
        task.advance(112)
        board.progress.refresh()
        task.finish()
    shown = sink.getvalue()
    assert "archiving" in shown and "112/196" in shown and "messages" in shown
    assert "━" in shown, "a bar is drawn"
    assert "(57%)" not in shown, "the periodic line is for consoles that are not terminals"
