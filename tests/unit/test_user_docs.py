"""What the README and docs/ tell a user to run exists: every `topica …` command, its
subcommand and its options are in the command line's argparse tree, and every `TOPICA_*`
variable is a setting. The README stays a short guide (at most 400 lines) with no
measurement log."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from cli.main import build_parser
from tests.unit.test_configuration_docs import expand, settings_variables

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)
COMMAND = re.compile(r"(?:^|[\s/(])topica((?:[ \t]+[^\s]+)*)", re.M)
STOP = {"#", "&&", "||", "|", ";", ">", "<", "\\|"}


def code_of(path: Path) -> list[str]:
    """The text of the file's code blocks and inline code spans."""
    text = path.read_text(encoding="utf-8")
    return [block or span for block, span in CODE.findall(text)]


def commands_in(path: Path) -> list[list[str]]:
    """Each `topica …` invocation in the file's code, as its words up to a shell operator."""
    found = []
    for code in code_of(path):
        for match in COMMAND.finditer(code):
            words = []
            for word in match.group(1).split():
                if word in STOP or word.startswith("#"):
                    break
                words.append(word)
            found.append(words)
    return found


def subparsers_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def valued_options(*parsers: argparse.ArgumentParser) -> set[str]:
    """The options of these parsers that take a value (`--data-dir DIR`, `--user ID`)."""
    return {
        option
        for parser in parsers
        for action in parser._actions
        if action.nargs != 0
        for option in action.option_strings
    }


def check(words: list[str], parser: argparse.ArgumentParser) -> str | None:
    """None when the command, subcommands and options exist; else what is wrong."""
    allowed = options_of(parser)
    chosen = parser
    takes_value = False
    for word in words:
        option = re.match(r"^\[?(--?[a-z][a-z-]*)", word)
        if option:
            if option.group(1) not in allowed:
                return f"unknown option {option.group(1)}"
            takes_value = option.group(1) in valued_options(chosen, parser)
            continue
        members = subparsers_of(chosen)
        if takes_value or not members:
            takes_value = False
            continue  # an argument (FILE, "QUESTION", an option's value)
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            return None  # prose around a name, not a command line
        if word not in members:
            return f"unknown command {word!r}"
        chosen = members[word]
        allowed |= options_of(chosen)
    if words and subparsers_of(chosen) and not {"-h", "--help", "--version"} & set(words):
        return "a command group without its subcommand"
    return None


def test_the_scanner_sees_commands_and_refuses_made_up_ones() -> None:
    parser = build_parser()
    assert check(["ask", '"Hi"', "--user", "7", "--json"], parser) is None
    assert check(["--data-dir", "x", "topics"], parser) is None
    assert check(["eval", "locomo", "--cross-validate"], parser) is None
    assert check(["bench", "cost", "--live"], parser) is None
    assert check(["search", "x"], parser) == "unknown command 'search'"
    assert check(["topics", "--all-users"], parser) == "unknown option --all-users"
    assert check(["eval", "floor", "--live"], parser) == "unknown option --live"


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_command_named_exists(path: Path) -> None:
    parser = build_parser()
    commands = commands_in(path)
    wrong = {" ".join(words): check(words, parser) for words in commands}
    assert not {command: why for command, why in wrong.items() if why}


def test_the_readme_names_the_commands_a_user_needs() -> None:
    named = {words[0] for words in commands_in(ROOT / "README.md") if words}
    assert {"ingest", "topics", "ask", "chat", "bot", "export"} <= named


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_variable_named_is_a_setting(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    names = re.findall(r"TOPICA_[A-Z0-9_{},]*[A-Z0-9}]", text)
    variables = {variable for name in names for variable in expand(name)}
    assert variables <= settings_variables(), variables - settings_variables()


def test_the_readme_is_a_short_guide_without_a_measurement_log() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    for diary in ("this round", "last round", "earlier round", "issue ", "before → now"):
        assert diary not in text.lower(), diary
    assert not re.search(r"`[0-9a-f]{7,40}`", text), "a commit hash"
    for section in (
        "## Prerequisites",
        "## Two commands",
        "## Running `topica`",
        "## Your own history",
        "## Connecting a model",
        "## The Telegram bot",
        "## LangGraph Studio",
        "## Configuration",
    ):
        assert section in text, section
    assert text.index("## Prerequisites") < text.index("## Configuration")
    assert ".venv/bin/topica" in text and "cp .env.example .env" in text
    assert "@BotFather" in text and "TOPICA_ALLOWED_USER_IDS" in text


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_links_to_docs_point_at_files_that_exist(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
        if target.endswith("evaluation.md"):
            continue  # written separately
        assert (path.parent / target).is_file(), target
