"""What a new user meets first on the command line: the version, progress with totals,
read-only commands that create nothing, an unknown user named as such, and a demo that
ends with the commands to try next on its (kept) data."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from cli.main import main
from tests.support.paths import ROOT
from tests.support.paths import THREE_SITTINGS as SESSION

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data directory holding the 60-message session of user 1, and ingest's stderr."""
    data_dir = tmp_path_factory.mktemp("first-run") / "data"
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        assert main(["ingest", str(SESSION), "--data-dir", str(data_dir)]) == 0
    return data_dir, errors.getvalue()


def test_version_is_the_package_version(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert capsys.readouterr().out == f"topica {project['version']}\n"


def test_ingest_piped_shows_its_progress_with_totals(ingested) -> None:
    _, stderr = ingested
    lines = stderr.splitlines()
    assert any(line.startswith("stored and indexed (60 new): 60/60 messages") for line in lines)
    archived = [line for line in lines if line.startswith("archiving: ")]
    assert archived and "60/60 messages (100%)" in archived[-1], stderr
    assert re.search(r"\d+ chunks → \d+ topics", archived[-1])


@pytest.mark.parametrize("command", [["topics"], ["export"], ["topics", "--json"]])
def test_a_read_only_command_on_a_missing_data_dir_says_so_and_creates_nothing(
    tmp_path: Path, capsys, command: list[str]
) -> None:
    missing = tmp_path / "typo"
    assert main([*command, "--data-dir", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"topica: error: no data in {missing}\n"
    assert captured.out == ""
    assert not missing.exists()


def test_a_writing_command_creates_the_data_dir(tmp_path: Path, capsys) -> None:
    fresh = tmp_path / "new"
    assert main(["ingest", str(SESSION), "--data-dir", str(fresh), "--json"]) == 0
    assert (fresh / "topica.sqlite3").is_file()


@pytest.mark.parametrize("command", ["topics", "export"])
def test_an_unknown_user_has_no_memory_yet_and_the_users_with_memory_are_named(
    ingested, capsys, command: str
) -> None:
    data_dir, _ = ingested
    assert main([command, "--user", "99", "--data-dir", str(data_dir)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"topica: error: user 99 has no memory yet in {data_dir}; "
        "users with memory there: 1 (--user ID)\n"
    )
    assert main([command, "--user", "1", "--data-dir", str(data_dir)]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--data-dir", "{data}", "topics", "--json"],
        ["topics", "--json", "--data-dir", "{data}"],
        ["--data-dir", "{typo}", "topics", "--json", "--data-dir", "{data}"],
        ["-v", "--data-dir", "{data}", "export"],
    ],
    ids=["before", "after", "after-wins", "verbose-before"],
)
def test_global_options_are_accepted_before_or_after_the_subcommand(
    ingested, tmp_path: Path, capsys, argv: list[str]
) -> None:
    data_dir, _ = ingested
    filled = [part.format(data=data_dir, typo=tmp_path / "typo") for part in argv]
    assert main(filled) == 0, capsys.readouterr().err
    assert '"summary"' in capsys.readouterr().out
    assert not (tmp_path / "typo").exists()


def test_a_first_question_from_a_new_user_says_it_starts_their_memory(ingested, capsys) -> None:
    data_dir, _ = ingested
    assert main(["ask", "Привет!", "--user", "42", "--data-dir", str(data_dir), "--json"]) == 0
    assert "user 42 has no memory yet: this conversation starts it" in capsys.readouterr().err
    assert main(["ask", "Ещё раз", "--user", "42", "--data-dir", str(data_dir), "--json"]) == 0
    assert "no memory yet" not in capsys.readouterr().err


def test_an_answer_without_a_model_names_what_to_set_to_connect_one(
    ingested, capsys, monkeypatch
) -> None:
    data_dir, _ = ingested
    for name in ("TOPICA_LLM_MODEL", "TOPICA_RESPONDER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["ask", "Where is the passport?", "--data-dir", str(data_dir), "--json"]) == 0
    error = " ".join(capsys.readouterr().err.split())
    assert "no language model is connected" in error
    for name in ("TOPICA_LLM_BASE_URL", "TOPICA_LLM_MODEL", "TOPICA_LLM_API_KEY", ".env.example"):
        assert name in error


def next_steps(stdout: str) -> list[list[str]]:
    """The commands the demo prints after its "Next" rule, split as a shell would."""
    tail = stdout.split("Next", 1)[1].splitlines()[1:]
    return [shlex.split(line.split("  #")[0]) for line in tail if line.startswith("  ")]


def test_the_demo_ends_with_what_to_try_next_on_its_kept_data(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["demo", "--keep"]) == 0
    (kept,) = tmp_path.glob("topica-demo-*")
    steps = next_steps(capsys.readouterr().out)
    assert [step[1:2] for step in steps[:2]] == [["ask"], ["chat"]]
    assert steps[2] == ["make", "studio", f"DATA_DIR={kept}"]
    for step in steps[:2]:
        assert step[step.index("--data-dir") + 1] == str(kept)
    ask = steps[0]
    assert main([*ask[1:], "--json"]) == 0, "the printed command runs on the kept memory"
    assert '"topics": [' in capsys.readouterr().out


def test_the_demo_without_keep_removes_its_data_and_says_how_to_keep_it(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["demo"]) == 0
    assert list(tmp_path.glob("topica-demo-*")) == []
    stdout = capsys.readouterr().out
    assert "demo --keep" in stdout.split("Next", 1)[1]
    assert [step[1:2] for step in next_steps(stdout)[:2]] == [["ask"], ["chat"]]


@pytest.mark.parametrize(
    "command",
    [["eval", "locomo", "--data", str(SESSION)], ["bench", "search", "--topics", "100"]],
    ids=["eval-locomo", "bench-search"],
)
def test_plots_without_the_bench_extra_are_refused_before_the_run(
    tmp_path: Path, monkeypatch, capsys, command: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the extra were not installed
    # eval and bench build services on a data directory they never use: keep it in tmp_path
    data_dir = ["--data-dir", str(tmp_path / "data")]
    assert main([*command, "--out", str(tmp_path / "out"), *data_dir]) == 2
    error = capsys.readouterr().err
    assert error.startswith("topica: error: plots need matplotlib: install the bench extra")
    assert not (tmp_path / "out").exists()
