"""Progress of long work: a bar on a terminal, a periodic line on stderr otherwise.

One helper for every long command (`topica ingest` and `demo`, `topica eval locomo`,
`topica bench search`). On a terminal each task is a rich progress bar (done/total,
rate, elapsed, time left). When the console is not a terminal (piped, CI, a log file)
a live display would print nothing useful, so each task writes a line at most every
`interval_s` while it moves, and one when it is done: a log shows where a long run is
and how fast it goes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as RichTask
from rich.text import Text

LINE_INTERVAL_S = 10.0


class RateColumn(ProgressColumn):
    """Items per second, in the task's unit."""

    def render(self, task: RichTask) -> Text:
        if not task.speed:
            return Text("")
        return Text(f"{task.speed:,.1f} {task.fields.get('unit', '')}/s".replace(" /", "/"))


def clock_text(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def progress_line(task: RichTask) -> str:
    """`description: done/total unit (pct%), rate unit/s, elapsed, about T left`."""
    unit = task.fields.get("unit", "")
    done = f"{task.completed:,.0f}"
    if task.total is not None:
        done += f"/{task.total:,.0f}"
    parts = [f"{task.description}: {done} {unit}".rstrip()]
    if task.total:
        parts[0] += f" ({task.percentage:.0f}%)"
    if task.speed:
        parts.append(f"{task.speed:,.1f} {unit}/s".replace(" /", "/"))
    if task.elapsed is not None:
        parts.append(f"{clock_text(task.elapsed)} elapsed")
    if task.time_remaining is not None and not task.finished:
        parts.append(f"about {clock_text(task.time_remaining)} left")
    return ", ".join(parts)


@dataclass
class ProgressTask:
    """One task of a board: advance it, change its description or total, finish it."""

    board: ProgressBoard
    id: TaskID
    finished: bool = False

    def advance(self, steps: float = 1) -> None:
        self.board.progress.advance(self.id, steps)
        self.board.report(self)

    def update(
        self, *, description: str | None = None, total: float | None = None, advance: float = 0
    ) -> None:
        """Change the description or total, and advance by `advance` in the same step (one
        line: the count never shows beside the description it does not belong to)."""
        changes: dict = {"advance": advance} if advance else {}
        if description is not None:
            changes["description"] = description
        if total is not None:
            changes["total"] = total
        self.board.progress.update(self.id, **changes)
        self.board.report(self)

    def finish(self, *, remove: bool = False) -> None:
        """Done: the last line is written (off a terminal); `remove` clears the bar."""
        if not self.finished:
            self.finished = True
            self.board.report(self, last=True)
        if remove:
            self.board.progress.remove_task(self.id)


@dataclass
class ProgressBoard:
    """Tasks shown on `console`: bars on a terminal, periodic lines elsewhere."""

    console: Console
    interval_s: float = LINE_INTERVAL_S
    clock: Callable[[], float] = time.monotonic
    progress: Progress = field(init=False)
    _last_line: dict[TaskID, float] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.live,
            get_time=self.clock,
        )

    @property
    def live(self) -> bool:
        return self.console.is_terminal

    def task(self, description: str, total: float | None = None, unit: str = "") -> ProgressTask:
        task = ProgressTask(self, self.progress.add_task(description, total=total, unit=unit))
        self._last_line[task.id] = self.clock()
        return task

    def report(self, task: ProgressTask, *, last: bool = False) -> None:
        """Off a terminal: a line when the task ends, and every `interval_s` while it moves
        (none when it starts: a command that fails at once prints only its error)."""
        if self.live:
            return
        state = next(each for each in self.progress.tasks if each.id == task.id)
        now = self.clock()
        ended = state.total is not None and state.completed >= state.total
        if ended and not task.finished:
            task.finished = last = True
        if not last and now - self._last_line[task.id] < self.interval_s:
            return
        self._last_line[task.id] = now
        self.console.print(progress_line(state), markup=False, highlight=False, soft_wrap=True)


@contextmanager
def progress_board(
    console: Console, *, interval_s: float = LINE_INTERVAL_S
) -> Iterator[ProgressBoard]:
    """A board whose live display (on a terminal) runs for the `with` block."""
    board = ProgressBoard(console, interval_s)
    with board.progress:
        yield board
