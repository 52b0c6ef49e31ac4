"""ChatGPT's data export (`conversations.json`): the branch each conversation shows.

The file is a JSON list read one conversation at a time. A conversation's `mapping` is a
tree of nodes; the branch shown ends at `current_node` and is found by walking `parent`
links up to the root. Only user and assistant text is kept; the rest is counted.
"""

from __future__ import annotations

from typing import Any

import ijson

from core.errors import ExportFormatError
from core.records import NewMessage
from stores.exports.history import Chat, ImportedHistory, json_error, utc_iso

TEXT_TYPES = frozenset({"text", "multimodal_text"})


def shown_branch(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes from the root to `current_node`, in order (a cycle ends the walk)."""
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        raise ExportFormatError("not a ChatGPT export (a conversation without a mapping)")
    branch, seen = [], set()
    node_id = conversation.get("current_node")
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        branch.append(node)
        node_id = node.get("parent") if isinstance(node, dict) else None
    return branch[::-1]


def _text(content: dict[str, Any]) -> str:
    parts = content.get("parts") or []
    return "\n".join(
        part if isinstance(part, str) else "[image]" for part in parts if part not in ("", None)
    ).strip()


def _message(node: dict[str, Any], chat: Chat, start: Any, history: ImportedHistory):  # type: ignore[no-untyped-def]
    message = node.get("message")
    if not isinstance(message, dict):
        return None  # the tree's root carries no message
    role = (message.get("author") or {}).get("role")
    content = message.get("content") or {}
    if role not in {"user", "assistant"}:
        history.skipped[f"{role or 'unknown'} message"] += 1
        return None
    if content.get("content_type") not in TEXT_TYPES:
        history.skipped[f"{content.get('content_type', 'unknown')} content"] += 1
        return None
    text = _text(content)
    stamp = message.get("create_time") or start
    if not text or stamp is None:
        history.skipped["empty" if not text else "no time"] += 1
        return None
    return NewMessage(
        external_id=f"chatgpt:{chat.id}:{node.get('id') or message.get('id')}",
        role=role,
        content=text,
        created_at=utc_iso(stamp),
    )


def read_chatgpt(stream) -> ImportedHistory:  # type: ignore[no-untyped-def]
    """Every conversation of a ChatGPT export read from `stream`, its shown branch only."""
    history = ImportedHistory("chatgpt")
    try:
        for conversation in ijson.items(stream, "item"):
            if not isinstance(conversation, dict):
                raise ExportFormatError("not a ChatGPT export (a list of conversations)")
            chat_id = str(conversation.get("conversation_id") or conversation.get("id") or "")
            chat = Chat(chat_id, str(conversation.get("title") or ""), "chatgpt")
            for node in shown_branch(conversation):
                message = _message(node, chat, conversation.get("create_time"), history)
                if message is not None:
                    history.messages.append(message)
                    chat.messages += 1
            history.chats.append(chat)
    except ijson.JSONError as error:
        raise json_error(error) from None
    if not history.chats:
        raise ExportFormatError("not a ChatGPT export (expected a list of conversations)")
    return history
