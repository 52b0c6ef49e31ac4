"""Messages with the documents they carried: a document's message stores only its label
(`[document: name]`), its text lives in passages (`store.attachments`). Wherever a
topic's messages are shown whole (tool results, the memory-only answer), the label is
followed by the document's text, so what was recalled through a passage is visible."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.ports import Store
from core.records import MessageRow, PassageRow


def with_documents(
    store: Store,
    user_id: int,
    messages: Sequence[MessageRow],
    pick: Callable[[list[PassageRow]], list[PassageRow]] | None = None,
    *,
    inline: bool = False,
) -> list[MessageRow]:
    """`messages`, those that carried documents with the documents' passages appended
    (all of them, or those `pick` chooses) under each file name: in `<document>` blocks,
    or `inline` on the label's line (for a one-line quote)."""
    passages = store.attachments.passages_of_messages(user_id, [m["id"] for m in messages])
    if not passages:
        return list(messages)
    by_message: dict[int, list[PassageRow]] = {}
    for passage in passages:
        by_message.setdefault(passage["message_id"], []).append(passage)
    shown = []
    for message in messages:
        carried = by_message.get(message["id"])
        if carried:
            chosen = pick(carried) if pick else carried
            content = document_text(message["content"], chosen, inline=inline)
            message = {**message, "content": content}
        shown.append(message)
    return shown


def document_text(label: str, passages: Sequence[PassageRow], *, inline: bool = False) -> str:
    """The message's label, then each document's passages under its file name."""
    blocks = [label]
    by_name: dict[str, list[str]] = {}
    for passage in passages:
        by_name.setdefault(passage["name"], []).append(passage["content"])
    if inline:
        quoted = " … ".join(" ".join(text.split()) for texts in by_name.values() for text in texts)
        return f"{label} «{quoted}»"
    for name, texts in by_name.items():
        blocks.append(f'<document name="{name}">\n' + "\n".join(texts) + "\n</document>")
    return "\n".join(blocks)
