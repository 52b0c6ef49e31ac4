"""The README's "Connecting a model", followed as written: copy `.env.example` to `.env`,
set the variables its example names, run `.venv/bin/topica ask` from that directory, and
the answer comes from the model (a scripted OpenAI-compatible server on loopback)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.paths import ROOT
from tests.support.processes import untraced_environment

pytestmark = pytest.mark.timeout(120)

ANSWER = "Hello from the model you connected."


def readme_model_variables() -> list[str]:
    """The variables the README's hosted-provider example sets, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Connecting a model", 1)[1].split("\n## ", 1)[0]
    example = section.split("```bash", 1)[1].split("```", 1)[0]
    assert "cp .env.example .env" in example
    return re.findall(r"^(TOPICA_[A-Z_]+)=", example, re.M)


def with_values(env_file: Path, values: dict[str, str]) -> None:
    lines = env_file.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.split("=", 1)[0] not in values]
    env_file.write_text("\n".join([*kept, *(f"{k}={v}" for k, v in values.items())]) + "\n")


async def test_the_readme_example_connects_a_model(tmp_path: Path) -> None:
    names = readme_model_variables()
    assert names == ["TOPICA_LLM_BASE_URL", "TOPICA_LLM_API_KEY", "TOPICA_LLM_MODEL"]
    topica = Path(sys.executable).parent / "topica"  # `.venv/bin/topica`, as the README says
    async with ScriptedOpenAI() as server:
        server.script(*[reply(ANSWER) for _ in range(4)])
        shutil.copy(ROOT / ".env.example", tmp_path / ".env")
        with_values(
            tmp_path / ".env",
            dict(zip(names, [server.base_url, "sk-test", "scripted"], strict=True)),
        )
        process = await asyncio.create_subprocess_exec(
            str(topica),
            "ask",
            "Привет, что ты помнишь обо мне?",
            "--json",
            env=untraced_environment(),
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=100)
    assert process.returncode == 0, stderr.decode()[-2000:]
    result = json.loads(stdout)
    assert result["answered_by"] == "responder"
    assert result["llm_calls"] > 0
    assert result["answer"] == ANSWER
    assert (tmp_path / "data" / "topica.sqlite3").is_file(), "the default data dir, ./data"
