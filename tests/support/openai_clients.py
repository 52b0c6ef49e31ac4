"""The real LangChain chat client and a tool, pointed at the scripted OpenAI-compatible
server (`tests.support.openai_server`), as its contract tests use them."""

from __future__ import annotations

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.support.openai_server import ScriptedOpenAI

CLIENT_TIMEOUT_S = 2.0


def make_llm(server: ScriptedOpenAI, timeout: float = CLIENT_TIMEOUT_S) -> ChatOpenAI:
    """The real client, pointed at the scripted server, with retries off so every scripted
    step maps to exactly one HTTP request."""
    return server.chat_model(timeout=timeout)


@tool
def get_topics_content(topic_ids: list[int]) -> str:
    """Return the archived content of the given topics."""
    return ",".join(str(t) for t in topic_ids)
