"""An OpenAI-compatible chat server on loopback that answers every Topica agent validly.

`topica bench cost` points each agent at its own model name (`bench-<agent>`), so the
server knows which agent is asking and answers what that agent expects: the splitter
topics of ten messages in each sitting, the merger "do not merge", the archivist a fact
for each topic it read, the enricher a query, the reranker a `get_topics_content` call and
then its JSON choice, the responder and the summariser plain text. Every request is logged
with the agent and the tokens the reply's `usage` reports (about four characters a token,
like the context budgets), so what the application counted can be checked against what
the server saw.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

MODEL_PREFIX = "bench-"
CHAT_PATH = "/v1/chat/completions"


async def serve_on_loopback(runner: web.AppRunner) -> int:
    """Set `runner` up and serve it on a free port of 127.0.0.1; that port."""
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


@dataclass(frozen=True)
class LoggedCall:
    agent: str
    prompt_tokens: int
    completion_tokens: int


def approx_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    calls = json.dumps(message.get("tool_calls")) if message.get("tool_calls") else ""
    return f"{message.get('role', '')} {content}{calls}"


def prompt_tokens(body: dict[str, Any]) -> int:
    text = "\n".join(message_text(message) for message in body.get("messages", []))
    if body.get("tools"):
        text += json.dumps(body["tools"])
    return approx_tokens(text)


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return message_text(users[-1])[len("user ") :] if users else ""


MESSAGES_PER_TOPIC = 10
"""The splitter's topics: runs of this many messages (the example session's non-LLM split
averages about ten), each summarised by the words of its first message."""


def split_topics(prompt: str) -> list[dict[str, Any]]:
    """Runs of `MESSAGES_PER_TOPIC` inside each sitting of the chunk (never across one)."""
    topics = []
    for sitting in re.findall(r"<sitting [^>]*>\n(.*?)\n</sitting>", prompt, flags=re.DOTALL):
        lines = re.findall(r"^\[id=(\d+)\] \[[^\]]*\]: (.*)$", sitting, flags=re.MULTILINE)
        for start in range(0, len(lines), MESSAGES_PER_TOPIC):
            run = lines[start : start + MESSAGES_PER_TOPIC]
            words = " ".join(run[0][1].split()[:24])
            topics.append(
                {
                    "summary": f"The user and the assistant discuss: {words}",
                    "start_msg_id": int(run[0][0]),
                    "end_msg_id": int(run[-1][0]),
                }
            )
    return topics


def agent_reply(agent: str, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(content, tool calls) a valid reply of `agent` to this request."""
    prompt = last_user_text(body)
    if agent == "splitter":
        return json.dumps({"topics": split_topics(prompt)}), []
    if agent == "merger":
        return json.dumps({"should_merge": False, "reason": "different subjects"}), []
    if agent == "archivist":
        facts = [
            {
                "action": "add",
                "type": "context",
                "content": f"Talked on {date}.",
                "topic_id": int(i),
            }
            for i, date in re.findall(r'<conversation topic_id="(\d+)" date="([^"]*)">', prompt)
        ]
        return json.dumps({"facts": facts, "people": []}), []
    if agent == "enricher":
        return " ".join(re.findall(r"\w+", prompt)[-8:]) or "query", []
    if agent == "reranker":
        ids = [int(i) for i in re.findall(r"\[ID:(\d+)\]", prompt)][:3]
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            return json.dumps({"topics": [{"id": i, "reason": "on topic"} for i in ids]}), []
        call = {"name": "get_topics_content", "arguments": json.dumps({"ids": ids})}
        return "", [{"id": "call_1", "type": "function", "function": call}]
    if agent == "summariser":
        return "The user and the assistant talked about plans.", []
    return "Here is what I remember about it.", []


class AgentServer:
    """`async with AgentServer() as server:` … `server.base_url`, `server.log`."""

    def __init__(self) -> None:
        self.log: list[LoggedCall] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> AgentServer:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post(CHAT_PATH, self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        port = await serve_on_loopback(self._runner)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        agent = str(body.get("model", "")).removeprefix(MODEL_PREFIX)
        content, tool_calls = agent_reply(agent, body)
        usage = {
            "prompt_tokens": prompt_tokens(body),
            "completion_tokens": approx_tokens(content + json.dumps(tool_calls)),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self.log.append(LoggedCall(agent, usage["prompt_tokens"], usage["completion_tokens"]))
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if tool_calls:
            message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(tool_calls)]
        finish = "tool_calls" if tool_calls else "stop"
        head = {"id": f"chatcmpl-{len(self.log)}", "created": int(time.time())}
        head["model"] = body.get("model")
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return web.json_response(
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        # A stream: the whole reply in one delta, its finish, then the usage.
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk = {**head, "object": "chat.completion.chunk"}
        for choices, extra in (
            ([{"index": 0, "delta": message, "finish_reason": None}], {}),
            ([{"index": 0, "delta": {}, "finish_reason": finish}], {}),
            ([], {"usage": usage}),
        ):
            payload = json.dumps({**chunk, "choices": choices, **extra})
            await response.write(f"data: {payload}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
