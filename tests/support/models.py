"""Chat models for tests: scripted fakes that record what they were shown, and the way to
give a set of services other models."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from itertools import chain, repeat
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from core.deps import Deps
from core.models import ModelRegistry


def with_models(deps: Deps, **models: Any) -> Deps:
    """The same stores and embedder, with these chat models (no others)."""
    return dataclasses.replace(deps, models=ModelRegistry.fixed(models))


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model that replays scripted replies and records every request.

    `prompts` holds the messages of each call and `call_kwargs` what was bound
    (e.g. `response_format`), so tests can check what a node showed the model.
    """

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(list(messages))
        self.call_kwargs.append(dict(kwargs))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _replies_then_error(replies: list[AIMessage], error: Exception) -> Iterator[AIMessage]:
    yield from replies
    raise error


def scripted_model(
    *replies: str | dict | list,
    then: str | dict | list | None = None,
    error: Exception | None = None,
) -> ScriptedChatModel:
    """A `ScriptedChatModel`: replies (text, or a dict/list sent as JSON) come in order;
    then `then` forever if given, or `error` is raised (a provider failure) if given."""

    def as_message(reply: str | dict | list) -> AIMessage:
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        return AIMessage(content=text)

    scripted = [as_message(reply) for reply in replies]
    if error is not None:
        return ScriptedChatModel(messages=_replies_then_error(scripted, error))
    tail = repeat(as_message(then)) if then is not None else iter(())
    return ScriptedChatModel(messages=chain(scripted, tail))


class RecordingChatModel(GenericFakeChatModel):
    """Replays scripted replies; records each prompt and the tools bound (seed: langgraph's
    prebuilt tests' fake model)."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        self.bound_tools.append([tool.name for tool in tools])
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def recording_model(*replies: str | AIMessage) -> RecordingChatModel:
    return RecordingChatModel(messages=iter(replies))
