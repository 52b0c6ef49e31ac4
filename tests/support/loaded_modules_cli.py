"""Run the `topica` CLI, then write the top-level packages the process had loaded.

Usage: python -m tests.support.loaded_modules_cli REPORT_FILE -- topica arguments...

A `--help` exits through SystemExit; the report is written either way.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    report, separator, *argv = sys.argv[1:]
    assert separator == "--"
    from cli.main import main as topica

    try:
        status = topica(argv)
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    with open(report, "w", encoding="utf-8") as handle:
        json.dump(sorted({name.split(".")[0] for name in sys.modules}), handle)
    return status


if __name__ == "__main__":
    sys.exit(main())
