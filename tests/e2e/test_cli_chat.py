"""`topica chat` in a real process, interrupted at its prompt."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.processes import environment_without

pytestmark = pytest.mark.timeout(180)


def read_until(fd: int, marker: bytes, timeout_s: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout_s
    poller = select.poll()  # not select.select: a long test session's fds pass 1024
    poller.register(fd, select.POLLIN)
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {marker!r} in {seen[-500:]!r}"
        ready = poller.poll(left * 1000)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            seen += chunk
    return seen


def as_from_a_shell() -> None:
    """The child's Ctrl-C as a shell starts it: default action, not blocked. A process
    inherits an ignored signal and the signal mask across exec, and in a full test run
    something earlier in this process (a library's threads or handlers) left SIGINT
    ignored or blocked: the chat then never saw the Ctrl-C (3 of 3 full runs)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_one_ctrl_c_at_the_prompt_ends_the_chat_at_once_with_130(tmp_path: Path):
    """Before: the first Ctrl-C did nothing, the second exited only after Enter (the
    prompt's reading thread held the process)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "chat", "--data-dir", str(tmp_path / "data")],
        cwd=ROOT,
        env=environment_without("TOPICA_", "LANGSMITH_", "LANGCHAIN_"),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        close_fds=True,
        preexec_fn=as_from_a_shell,
    )
    os.close(terminal)
    try:
        read_until(controller, b"you> ", timeout_s=150)
        time.sleep(0.3)  # the prompt's read has begun
        process.send_signal(signal.SIGINT)
        # Read while it exits: a terminal nobody reads blocks a process writing to it.
        assert b"interrupted" in read_until(controller, b"interrupted", timeout_s=10)
        assert process.wait(timeout=10) == 130
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
