"""The settings are documented in step: README's configuration table, `.env.example` and
`core.settings.Settings` name the same variables, and `.env.example` shows the defaults."""

from __future__ import annotations

import re
from pathlib import Path

from core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def settings_variables() -> set[str]:
    return {f"TOPICA_{name.upper()}" for name in Settings.model_fields}


def env_example() -> dict[str, str]:
    lines = (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
    pairs = [line.split("=", 1) for line in lines if line and not line.startswith("#")]
    return {name.strip(): value.strip() for name, value in pairs}


def expand(name: str) -> list[str]:
    """`TOPICA_{A,B}_MODEL` → `TOPICA_A_MODEL`, `TOPICA_B_MODEL`."""
    found = re.search(r"\{([^}]*)\}", name)
    if not found:
        return [name]
    head, tail = name[: found.start()], name[found.end() :]
    return [
        variable for part in found.group(1).split(",") for variable in expand(head + part + tail)
    ]


def readme_variables() -> list[str]:
    """The variables in the first column of README's "Configuration" table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    names = [name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])]
    return [variable for name in names for variable in expand(name)]


def test_readme_names_every_setting_once_and_nothing_else() -> None:
    documented = readme_variables()
    assert len(documented) == len(set(documented)), "a variable is in the table twice"
    assert set(documented) == settings_variables()


def test_env_example_names_every_setting_and_nothing_else() -> None:
    assert set(env_example()) == settings_variables()


def test_env_example_shows_the_defaults() -> None:
    """Copying `.env.example` to `.env` changes nothing: its values are the defaults."""
    from_example = Settings(_env_file=ROOT / ".env.example")
    defaults = Settings(_env_file=None)
    assert from_example.model_dump() == defaults.model_dump()


def test_expand() -> None:
    assert expand("TOPICA_{A,B}_MODEL") == ["TOPICA_A_MODEL", "TOPICA_B_MODEL"]
    assert expand("TOPICA_X") == ["TOPICA_X"]
