"""Run the `topica` CLI while recording every network connection the process attempts.

Usage: python -m tests.support.audited_cli REPORT_FILE -- topica arguments...

An audit hook (PEP 578) sees `socket.connect` and `socket.getaddrinfo` from
any library, so the tracing test can prove that without LangSmith variables
Topica opens no connection at all.
"""

from __future__ import annotations

import json
import sys

attempts: list[list[str]] = []


def audit(event: str, args: tuple) -> None:
    if event in ("socket.connect", "socket.getaddrinfo"):
        attempts.append([event, repr(args[1] if event == "socket.connect" else args[0])])


def main() -> int:
    report, separator, *argv = sys.argv[1:]
    assert separator == "--"
    sys.addaudithook(audit)
    from cli.main import main as topica

    status = topica(argv)
    with open(report, "w", encoding="utf-8") as handle:
        json.dump(attempts, handle)
    return status


if __name__ == "__main__":
    sys.exit(main())
