"""The project's source files as syntax trees, for the tests that read the code itself
(layers, packaging)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache  # the tree does not change while the tests run: each file is parsed once a run
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))
