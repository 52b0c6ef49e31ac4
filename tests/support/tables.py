"""Parametrised cases written as a table, one case a line and its columns split by `|`,
for tests whose cases are rows of short strings."""

from __future__ import annotations


def rows(table: str) -> list[tuple[str, ...]]:
    """The rows of `table`: each non-blank line split at `|`, every cell stripped; all rows
    must have as many cells as the first."""
    found = [
        tuple(cell.strip() for cell in line.split("|"))
        for line in table.splitlines()
        if line.strip()
    ]
    assert found and all(len(row) == len(found[0]) for row in found), f"uneven table: {found}"
    return found
