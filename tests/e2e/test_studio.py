"""`langgraph dev` serves the four graphs offline; the SDK runs the memory and response graphs.

The server is a real `langgraph dev` process on 127.0.0.1 over a temporary data
directory, bounded in time and stopped by its process id. It runs on the project's
`langgraph.json` with the graphs' paths made absolute and its `env` file moved to a
temporary one, which alone names the data directory: the runs finding the seeded
messages prove that Studio takes its settings from the env file. Its responder is the real
`ChatOpenAI` on the scripted server (on a thread of its own), named in that env file too:
a run with nothing scripted gets an HTTP 500 and answers from memory alone; a scripted
reply streams its tokens to the SDK as the model writes them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from core.settings import Settings
from stores.saved_sessions import read_session
from stores.services import build_deps
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.paths import ROOT
from tests.support.paths import THREE_SITTINGS as SESSION
from tests.support.processes import free_port, untraced_environment

USER_ID = 7
STARTUP_S = 90
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAI]:
    """The scripted model on an event loop of its own thread (each test has its own loop)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    scripted = ScriptedOpenAI()
    asyncio.run_coroutine_threadsafe(scripted.start(), loop).result(timeout=10)
    try:
        yield scripted
    finally:
        asyncio.run_coroutine_threadsafe(scripted.stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("studio-data")


@pytest.fixture(scope="module")
def server(data_dir: Path, model_server: ScriptedOpenAI) -> Iterator[str]:

    async def seed() -> None:
        deps = build_deps(Settings(data_dir=data_dir))
        deps.indexer.store_messages(USER_ID, read_session(SESSION))
        deps.close()

    asyncio.run(seed())
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert config["env"] == ".env"
    env_file = data_dir / "studio.env"
    env_file.write_text(
        f"TOPICA_DATA_DIR={data_dir}\n"
        f"TOPICA_LLM_BASE_URL={model_server.base_url}\n"
        "TOPICA_LLM_API_KEY=test\nTOPICA_LLM_MAX_RETRIES=0\nTOPICA_RESPONDER_MODEL=scripted\n",
        encoding="utf-8",
    )
    config |= {
        "env": str(env_file),
        "dependencies": [str(ROOT)],
        "graphs": {name: str(ROOT / path) for name, path in config["graphs"].items()},
    }
    (data_dir / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    port = free_port()
    environment = untraced_environment() | {"LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    log = (data_dir / "server.log").open("w")
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "langgraph"),
            "dev",
            "--config",
            str(data_dir / "langgraph.json"),
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert process.poll() is None, (data_dir / "server.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "langgraph dev did not start in time"
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()


async def test_four_graphs_are_served(server: str) -> None:
    client = get_client(url=server)
    assistants = await client.assistants.search()
    assert {assistant["graph_id"] for assistant in assistants} == {
        "response",
        "memory",
        "reranker",
        "tasks",
    }
    schemas = await client.assistants.get_schemas(
        next(a["assistant_id"] for a in assistants if a["graph_id"] == "response")
    )
    assert set(schemas["input_schema"]["properties"]) >= {"text"}
    assert "user_id" in schemas["context_schema"]["properties"]


async def test_memory_then_response_through_the_sdk(server: str) -> None:
    client = get_client(url=server)
    # A memory run archives one chunk (as `topica ingest` does, it runs again until
    # nothing is left): the whole session takes several runs.
    saved: list[int] = []
    for _ in range(20):
        thread = await client.threads.create()
        archived = await client.runs.wait(
            thread["thread_id"],
            "memory",
            input={},
            context={"user_id": USER_ID, "archive_all": True},
        )
        if not archived.get("saved_topic_ids"):
            break
        assert archived["coverage"]["uncovered"] == []
        saved += archived["saved_topic_ids"]
    else:
        raise AssertionError("20 memory runs did not archive the session")
    assert saved

    thread = await client.threads.create()
    answer = await client.runs.wait(
        thread["thread_id"],
        "response",
        input={"text": "Что сказал ветеринар про Марципана?"},
        context={"user_id": USER_ID},
    )
    assert answer["answer"].strip()
    assert answer["selected_topics"], "the vet conversation was not recalled"
    assert "Марципан" in answer["answer"]


@pytest.mark.parametrize(
    ("context", "problem"),
    [
        (None, "user_id: Field required"),
        ({}, "user_id: Field required"),
        ({"user_id": "Alexei"}, "user_id: Input should be a valid integer"),
        ({"user_id": 1, "rerank_max_topics": "five"}, "rerank_max_topics: Input should be"),
    ],
    ids=["no-context", "empty", "user-id-not-a-number", "limit-not-a-number"],
)
async def test_a_run_with_a_missing_or_invalid_context_fails_saying_so(
    server: str, context: dict | None, problem: str
) -> None:
    client = get_client(url=server)
    thread = await client.threads.create()
    with pytest.raises(Exception, match="InvalidContext") as raised:
        await client.runs.wait(
            thread["thread_id"], "response", input={"text": "Привет"}, context=context
        )
    assert problem in str(raised.value)
    assert "assistant's configuration" in str(raised.value)
    assert "TypeError" not in str(raised.value)


async def test_the_sdk_sees_the_answer_while_the_model_writes_it(
    server: str, model_server: ScriptedOpenAI
) -> None:
    answer = "Ветеринар сказал: у Марципана болезнь почек, нужна диета Renal и фонтанчик."
    model_server.script(reply(answer, pace_s=0.05))
    client = get_client(url=server)
    thread = await client.threads.create()
    tokens: list[str] = []
    model_done_at_first_token = None
    async for part in client.runs.stream(
        thread["thread_id"],
        "response",
        input={"text": "Что сказал ветеринар про Марципана?"},
        context={"user_id": USER_ID},
        stream_mode="messages-tuple",
    ):
        if part.event != "messages":
            continue
        message, metadata = part.data
        if metadata.get("langgraph_node") == "respond" and message.get("content"):
            if not tokens:
                model_done_at_first_token = model_server.streams[-1].completed
            tokens.append(message["content"])

    assert len(tokens) > 5 and "".join(tokens) == answer
    assert model_done_at_first_token is False, "the first token came while the model wrote"


async def test_a_studio_run_stores_the_question_first_then_the_answer(
    server: str, data_dir: Path
) -> None:
    """Studio hands the graph only the text: the graph stores it, before the answer, as
    the CLI does; the answer (memory-only: the model fails) points at it."""
    question = "Какую диету назначили Марципану?"
    client = get_client(url=server)
    thread = await client.threads.create()
    answer = await client.runs.wait(
        thread["thread_id"], "response", input={"text": question}, context={"user_id": USER_ID}
    )
    assert answer["answer"].strip() and answer["message_id"] is not None

    deps = build_deps(Settings(data_dir=data_dir))
    try:
        messages = deps.store.messages.all_of(USER_ID)
    finally:
        deps.close()
    asked = [m for m in messages if m["content"] == question]
    assert len(asked) == 1, "the question was stored once"
    stored = asked[0]
    assert stored["id"] == answer["message_id"]
    assert (stored["role"], stored["kind"], stored["topic_id"]) == ("user", "conversation", None)
    reply = next(m for m in messages if m["id"] == answer["answer_message_id"])
    assert reply["external_id"] == f"reply-to-{stored['id']}"
    assert reply["seq"] > stored["seq"]
    assert reply["kind"] == "memory_only_answer"
