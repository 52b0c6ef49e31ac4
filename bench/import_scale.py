"""Importing a large Telegram export: time and peak memory of reading it (streamed,
beside `json.load` of the same file), and the whole import's throughput, step by step.

    python -m bench.import_scale --messages 100000 --archive 10000
    python -m bench.import_scale --import-only --archive 2000

`--archive` messages are imported whole (read, store and index, memory graph with no
model), with each step's messages/s, the CPU seconds and the load average beside the
wall time. Each figure comes from a fresh process (its own peak RSS). The export is generated
(Russian and English lines, entity lists, media, service messages) and written as a
stream, so the generator itself never holds it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    *[
        "поезд",
        "билеты",
        "Казань",
        "мама",
        "отчёт",
        "пятница",
        "встреча",
        "кофе",
        "книга",
        "отпуск",
        "врач",
        "работа",
    ],
    *[
        "train",
        "tickets",
        "meeting",
        "coffee",
        "book",
        "holiday",
        "doctor",
        "report",
        "friday",
        "garden",
        "project",
    ],
]

READ_STREAMED = """
import sys, time
from pathlib import Path
from stores.exports.history import open_export
from stores.exports.telegram import read_telegram
start = time.perf_counter()
with open_export(Path(sys.argv[1]), ("result.json",), 1 << 40) as stream:
    history = read_telegram(stream)
print(len(history.messages), time.perf_counter() - start)
"""
IMPORT = """
import asyncio, json, sys, time
from pathlib import Path
from rich.console import Console
from app.imports import import_history, read_export
from core.progress import progress_board
from core.settings import Settings
from stores.checkpoints import durable_checkpointer
from stores.services import build_deps

async def run(history, deps, board):
    async with durable_checkpointer(deps.settings) as checkpointer:
        return await import_history(deps, history, 1, checkpointer=checkpointer, progress=board)

start = time.perf_counter()
history = read_export(Path(sys.argv[1]), 1 << 40)
steps = {"read": [len(history.messages), time.perf_counter() - start]}
deps = build_deps(Settings(data_dir=Path(sys.argv[2])))
with progress_board(Console(stderr=True)) as board:
    report = asyncio.run(run(history, deps, board))
for task in board.progress.tasks:
    name = "store+index" if task.description.startswith("stored") else "memory graph"
    steps[name] = [task.completed, task.finished_time or task.elapsed]
steps["topics"] = len(report["topics"])
print(json.dumps(steps))
"""
READ_WHOLE = """
import json, sys, time
start = time.perf_counter()
with open(sys.argv[1], "rb") as file:
    data = json.load(file)
print(sum(len(chat["messages"]) for chat in data["chats"]["list"]), time.perf_counter() - start)
"""


def message(number: int, rng: random.Random) -> dict:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 120)))
    sender = rng.choice([("Анна", "user1"), ("Олег", "user2")])
    body: dict = {
        "id": number,
        "type": "service" if number % 97 == 0 else "message",
        "date": "2024-01-01T10:00:00",
        "date_unixtime": str(1_704_103_200 + number * 30),
        "from": sender[0],
        "from_id": sender[1],
        "text": [text, {"type": "bold", "text": "!"}] if number % 5 == 0 else text,
    }
    if number % 50 == 0:
        body["photo"] = f"photos/photo_{number}.jpg"
    return body


def generate(path: Path, messages: int, chats: int = 20, seed: int = 7) -> None:
    rng = random.Random(seed)
    per_chat = max(1, messages // chats)
    with path.open("w", encoding="utf-8") as out:
        out.write('{"about": "", "personal_information": {"user_id": 1, "first_name": "Анна"},')
        out.write(' "chats": {"list": [')
        for chat in range(chats):
            out.write("," if chat else "")
            header = {"name": f"Friend {chat}", "type": "personal_chat", "id": 1000 + chat}
            out.write(json.dumps(header, ensure_ascii=False)[:-1] + ', "messages": [')
            for number in range(1, per_chat + 1):
                out.write(("," if number > 1 else "") + json.dumps(message(number, rng)))
            out.write("]}")
        out.write("]}}")


PEAK = """
import resource, runpy, sys
kind, payload, *rest = sys.argv[1:]
sys.argv = [payload, *rest]
try:
    exec(payload) if kind == "code" else runpy.run_module(payload, run_name="__main__")
except SystemExit:
    pass
sys.stdout.flush()
usage = resource.getrusage(resource.RUSAGE_SELF)
print("\\npeak", usage.ru_maxrss, usage.ru_utime + usage.ru_stime)
"""


def child(args: list[str]) -> tuple[str, float, float, float]:
    """Run a Python child (`code SOURCE …` or `module NAME …`), its stderr (the import's
    progress) passed through; its stdout, wall seconds, peak RSS in MB and CPU seconds
    (on a machine shared with other work, the figure that load does not inflate)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *args], stdout=subprocess.PIPE, text=True, check=True
    )
    wall = time.perf_counter() - start
    out, usage = done.stdout.rsplit("\npeak", 1)
    peak, cpu = usage.split()
    return out.strip(), wall, int(peak) / 1024, float(cpu)


def read_figures(folder: Path, messages: int) -> None:
    """Reading an export of `messages`, streamed and with `json.load`."""
    export = folder / "result.json"
    generate(export, messages)
    print(f"export: {messages} messages, {export.stat().st_size / 1e6:.1f} MB")
    print("| reading | messages | wall s | peak RSS MB |\n|---|---:|---:|---:|")
    for name, code in (("streamed (Topica)", READ_STREAMED), ("json.load", READ_WHOLE)):
        out, wall, peak, _ = child(["code", code, str(export)])
        print(f"| {name} | {out.split()[0]} | {wall:.1f} | {peak:.0f} |")


def import_figures(folder: Path, messages: int) -> None:
    """The whole import of an export of `messages` (no model): each step's messages/s."""
    (folder / "import").mkdir()
    export = folder / "import" / "result.json"
    generate(export, messages, chats=2)
    load = os.getloadavg()[0]
    out, wall, peak, cpu = child(["code", IMPORT, str(export), str(folder / "data")])
    steps = json.loads(out)
    print(
        f"\nimport of {steps['read'][0]} messages (no model), {steps['topics']} topics: "
        f"{wall:.1f} s in all ({cpu:.1f} s of CPU), peak RSS {peak:.0f} MB, "
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after\n"
        "| step | messages | wall s | messages/s |\n|---|---:|---:|---:|"
    )
    for name in ("read", "store+index", "memory graph"):
        count, seconds = steps[name]
        print(f"| {name} | {count:.0f} | {seconds:.1f} | {count / seconds:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="messages read")
    parser.add_argument("--archive", type=int, default=2_000, help="messages imported whole")
    parser.add_argument("--import-only", action="store_true", help="skip the reading figures")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if not options.import_only:
            read_figures(Path(folder), options.messages)
        import_figures(Path(folder), options.archive)


if __name__ == "__main__":
    main()
