"""Requests shaped by what the endpoint honours, and replies read as it answers.

`Settings` says what the configured endpoint honours (`TOPICA_LLM_*`, probed by
`topica doctor --llm`). From it come the mechanism that forces one tool call (a named
`tool_choice`, else `"required"` with that one tool, else the tool offered alone; where
the endpoint returns no tool calls, the call's arguments asked for as JSON), the JSON
mode of a structured reply, and the request field that bounds a reply's tokens.

A forced call that comes back written as content (`{"name": …, "arguments": …}` or the
bare arguments, fenced or wrapped in prose) is read back into a tool call when its
arguments validate against the tool's schema: `repair_tool_call` says so, the caller
records it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

from core.settings import AgentName, Settings
from nodes.shared.structured import LLMOutputError, message_text, parse_json_value

ForceMechanism = Literal["named", "required", "offered", "json_schema", "json_object", "prompt"]
"""How a forced tool call is asked for, strongest first."""

JSON_MODE = {"type": "json_object"}
REPAIRED_CALL_ID = "repaired_call"
ARGUMENT_KEYS = ("arguments", "parameters", "args")


def force_mechanism(settings: Settings) -> ForceMechanism:
    """The strongest way the endpoint honours to make the model call one tool."""
    if settings.llm_tool_calls:
        if settings.llm_named_tool_choice:
            return "named"
        return "required" if settings.llm_required_tool_choice else "offered"
    if settings.llm_json_schema:
        return "json_schema"
    return "json_object" if settings.llm_json_object else "prompt"


def json_schema_format(name: str, schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    body = schema if isinstance(schema, dict) else schema.model_json_schema()
    return {"type": "json_schema", "json_schema": {"name": name, "schema": body}}


def json_format(settings: Settings, name: str, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The `response_format` of a JSON reply: the schema where the endpoint is set to
    enforce one, else JSON mode, else none (the prompt alone asks for JSON)."""
    if settings.llm_json_schema:
        return json_schema_format(name, schema)
    return JSON_MODE if settings.llm_json_object else None


def bind_forced(model: BaseChatModel, tool: BaseTool, mechanism: ForceMechanism) -> Runnable:
    """`model` prepared to call `tool` by `mechanism`."""
    if mechanism == "named":
        choice = {"type": "function", "function": {"name": tool.name}}
        return model.bind_tools([tool], tool_choice=choice)
    if mechanism == "required":
        return model.bind_tools([tool], tool_choice="required")
    if mechanism == "offered":
        return model.bind_tools([tool])
    if mechanism == "json_schema":
        schema = tool.tool_call_schema
        body = schema if isinstance(schema, dict) else schema.model_json_schema()
        return model.bind(response_format=json_schema_format(tool.name, body))
    if mechanism == "json_object":
        return model.bind(response_format=JSON_MODE)
    return model


def arguments_request(tool: BaseTool, messages: list[BaseMessage]) -> list[BaseMessage]:
    """The messages with an instruction to answer with the tool's arguments as JSON (for
    an endpoint that returns no tool calls)."""
    schema = tool.tool_call_schema
    body = schema if isinstance(schema, dict) else schema.model_json_schema()
    instruction = (
        f"Answer with only a JSON object: the arguments of `{tool.name}` "
        f"({tool.description.strip()}), matching this JSON schema: {json.dumps(body)}"
    )
    return [*messages, SystemMessage(instruction)]


def _validated_arguments(tool: BaseTool, value: object) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if not isinstance(value, dict):
        return None
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        return value
    try:
        return schema.model_validate(value).model_dump(mode="json")
    except ValidationError:
        return None


def arguments_in_content(tool: BaseTool, reply: AIMessage) -> dict[str, Any] | None:
    """The tool's arguments written in the reply's text, or None."""
    try:
        value = parse_json_value(message_text(reply))
    except LLMOutputError:
        return None
    candidates = value if isinstance(value, list) else [value]
    for candidate in candidates:
        if isinstance(candidate, dict) and candidate.get("name") == tool.name:
            inner = next((candidate[key] for key in ARGUMENT_KEYS if key in candidate), {})
            arguments = _validated_arguments(tool, inner)
        else:
            arguments = _validated_arguments(tool, candidate)
        if arguments is not None:
            return arguments
    return None


def repair_tool_call(tool: BaseTool, reply: AIMessage) -> AIMessage | None:
    """The reply with the tool call its text holds, or None when it calls the tool
    already or holds no valid call."""
    if any(call["name"] == tool.name for call in reply.tool_calls):
        return None
    arguments = arguments_in_content(tool, reply)
    if arguments is None:
        return None
    call = {"name": tool.name, "args": arguments, "id": REPAIRED_CALL_ID, "type": "tool_call"}
    return AIMessage(
        content="",
        tool_calls=[call],
        id=reply.id,
        usage_metadata=reply.usage_metadata,
        response_metadata=reply.response_metadata,
    )


def token_limit(settings: Settings, agent: AgentName) -> dict[str, Any]:
    """The call's keyword arguments that bound its reply, in the field the endpoint reads.

    `ChatOpenAI` sends its `max_tokens` as `max_completion_tokens`; a literal
    `max_tokens` field goes in the request body's extras."""
    limit = settings.max_tokens_for(agent)
    if settings.llm_token_limit_field == "max_tokens":
        return {"extra_body": {"max_tokens": limit}}
    return {"max_completion_tokens": limit}
