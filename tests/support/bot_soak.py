"""The kill -9 soak of bot turns: `topica bot` killed at random moments of its turns.

One user talks to a real `topica bot` process on the fake Bot API. Each round sends a
message, waits until the bot is in the turn ("typing…" was sent for it), then SIGKILLs
the process after a random pause; the next round starts a fresh process on the same data
directory, and the fake server redelivers every update the dead one had not confirmed,
as Telegram does. After the last kill one more process runs until every message is
answered (or `settle_s` passes) and stops with SIGTERM.

Counted from both sides: the messages sent, those stored (SQLite), those answered in the
store (`unanswered` is empty for them), those answered in Telegram (a successful
sendMessage replying to the message, or to a later one of the same group), lost (sent
but not stored), and answered twice (two answers replying to one message).
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import statistics
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bot.texts import ENGLISH
from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_process import start_bot_process

USER = FakeUser(101, "Alice", "en")
QUESTIONS = [
    "Remember: the spare key is under the blue flower pot.",
    "What do you know about my spare key?",
    "My sister Ira arrives on Friday at 18:40 by train.",
    "When does Ira arrive?",
    "I switched the router to channel 11, the wifi is better now.",
    "Which wifi channel did I pick?",
]


def count(label: str) -> Any:
    """A count of the soak, shown in its table as `label`."""
    return field(default=0, metadata={"label": label})


@dataclass
class SoakReport:
    kills: int = 0
    kills_in_turn: int = 0
    """Kills that landed while a turn was running (before its answer was sent)."""
    sent: int = count("messages sent")
    stored: int = count("stored")
    answered_in_store: int = count("answered (store)")
    answered_in_telegram: int = count("answered (Telegram)")
    answered_twice: int = count("answered twice")
    lost: int = count("lost")
    turn_failed_replies: int = count("'turn failed' replies")
    restarts_s: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    def rows(self) -> list[tuple[str, str]]:
        counts = [
            (f.metadata["label"], str(getattr(self, f.name)))
            for f in fields(self)
            if "label" in f.metadata
        ]
        return [
            ("kill -9 during a turn", f"{self.kills_in_turn} of {self.kills} kills"),
            *counts,
            ("wall time", f"{self.wall_s:.0f} s"),
        ]

    def table(self) -> str:
        width = max(len(name) for name, _ in self.rows())
        lines = [f"{'bot turns soak':<{width}} | figure", f"{'-' * width}-|-------"]
        lines += [f"{name:<{width}} | {value}" for name, value in self.rows()]
        return "\n".join(lines)


def _answers(api: FakeBotAPI) -> list[tuple[int, str]]:
    """(replied-to message id, text) of every successful sendMessage to the user."""
    return [
        (int(call.params["reply_parameters"]["message_id"]), call.result["text"])
        for call in api.sent_messages(USER.id)
        if call.params.get("reply_parameters")
    ]


def _typing_count(api: FakeBotAPI) -> int:
    return len(api.calls_of("sendChatAction"))


def _store_counts(data_dir: Path, sent_ids: list[int]) -> tuple[int, int]:
    """(stored, answered in store) among the sent messages."""
    with sqlite3.connect(data_dir / "topica.sqlite3") as db:
        stored = {
            row[0]
            for row in db.execute(
                "SELECT external_id FROM messages WHERE user_id = ? AND role = 'user'", (USER.id,)
            )
        }
        answered_seq = db.execute(
            "SELECT COALESCE(MAX(q.seq), 0) FROM messages q JOIN messages a "
            "ON a.user_id = q.user_id AND a.external_id = 'reply-to-' || q.id "
            "WHERE q.user_id = ?",
            (USER.id,),
        ).fetchone()[0]
        seqs = dict(
            db.execute("SELECT external_id, seq FROM messages WHERE user_id = ?", (USER.id,))
        )
    ids = [f"tg-{USER.id}-{message_id}" for message_id in sent_ids]
    return (
        sum(1 for i in ids if i in stored),
        sum(1 for i in ids if i in seqs and seqs[i] <= answered_seq),
    )


async def soak_bot_turns(
    workdir: Path, *, kills: int, seed: int, max_pause_s: float = 3.0, settle_s: float = 180.0
) -> SoakReport:
    rng = random.Random(seed)
    report = SoakReport()
    data_dir, log = workdir / "data", workdir / "bot.log"
    sent_ids: list[int] = []
    durations: list[float] = []
    started = time.monotonic()

    def answered(message: dict) -> bool:
        return any(reply_to >= message["message_id"] for reply_to, _ in _answers(api))

    async with FakeBotAPI() as api:
        for round_number in range(kills):
            before = time.monotonic()
            bot = await start_bot_process(
                api, data_dir, log, allowed_user_ids=USER.id, turn_wait_s=0.2
            )
            report.restarts_s.append(time.monotonic() - before)
            try:
                typing = _typing_count(api)
                message = api.send_text(USER, QUESTIONS[round_number % len(QUESTIONS)])
                sent_ids.append(message["message_id"])
                await api.wait_until(
                    lambda typing=typing: _typing_count(api) > typing,
                    within_s=60,
                    what="the turn to start",
                )
                # Kill at a random moment of the turn: uniform over the turn's length as
                # measured on the turns that finished before their kill.
                turn_s = statistics.median(durations) if durations else max_pause_s
                pause = rng.uniform(0.0, turn_s)
                typing_at = time.monotonic()
                # Polled: the kill must land at the drawn moment, not at an event.
                while time.monotonic() - typing_at < pause and not answered(message):  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
                in_turn = not answered(message)
                if not in_turn:
                    durations.append(time.monotonic() - typing_at)
            finally:
                await bot.kill()
            report.kills += 1
            report.kills_in_turn += int(in_turn)
            print(
                f"kill {report.kills}: {'during the turn' if in_turn else 'after the answer'}, "
                f"restart took {report.restarts_s[-1]:.0f} s",
                flush=True,
            )

        bot = await start_bot_process(api, data_dir, log, allowed_user_ids=USER.id, turn_wait_s=0.2)
        try:
            last = sent_ids[-1]
            deadline = time.monotonic() + settle_s
            while time.monotonic() < deadline:
                answered = {reply_to for reply_to, _ in _answers(api)}
                if answered and max(answered) >= last and api.pending_updates() == 0:
                    break
                await asyncio.sleep(0.5)
            await asyncio.sleep(1.0)
        finally:
            await bot.stop()
        answers = _answers(api)
        good = [(reply_to, text) for reply_to, text in answers if text != ENGLISH.turn_failed]
        replied = [reply_to for reply_to, _ in good]
        report.turn_failed_replies = len(answers) - len(good)
        report.answered_twice = len(replied) - len(set(replied))
        report.answered_in_telegram = sum(
            1 for message_id in sent_ids if any(r >= message_id for r in replied)
        )
    report.sent = len(sent_ids)
    report.stored, report.answered_in_store = _store_counts(data_dir, sent_ids)
    report.lost = report.sent - report.stored
    report.wall_s = time.monotonic() - started
    return report
