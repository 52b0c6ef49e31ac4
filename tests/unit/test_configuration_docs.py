"""The settings are documented in step: docs/configuration.md's table, `.env.example` and
`core.settings.Settings` name the same variables, `.env.example` shows the defaults, and
README's short table names only real settings."""

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


def table_variables(path: Path, heading: str | None = None) -> list[str]:
    """The variables in the first column of a Markdown table (under `heading` if given)."""
    text = path.read_text(encoding="utf-8")
    if heading is not None:
        text = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    names = [name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])]
    return [variable for name in names for variable in expand(name)]


def test_the_configuration_doc_names_every_setting_once_and_nothing_else() -> None:
    documented = table_variables(ROOT / "docs" / "configuration.md")
    assert len(documented) == len(set(documented)), "a variable is in the table twice"
    assert set(documented) == settings_variables()


def test_the_readme_table_is_short_and_names_only_real_settings() -> None:
    documented = table_variables(ROOT / "README.md", "## Configuration")
    assert documented, "README has no configuration table"
    assert len(documented) == len(set(documented)), "a variable is in the table twice"
    assert set(documented) <= settings_variables(), set(documented) - settings_variables()
    assert len(documented) <= 15, "the full list belongs in docs/configuration.md"


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
