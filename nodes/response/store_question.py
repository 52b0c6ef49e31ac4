"""Store question: the turn's message is stored before anything else, whoever runs the graph.

The command line and the bot store the message themselves (`store_user_message`, under
its Telegram or turn id) and hand its row id in as `message_id`; this node then does
nothing. A run that brings only the text, as LangGraph Studio and the SDK do, has its
question stored here, first, as the user's conversation at the turn's moment, so its
answer (stored by `finalize`, tied to the question's row) is never a lone answer in
memory. Checkpointed like every node, a resumed run does not store it twice.
"""

from __future__ import annotations

import asyncio
from uuid import uuid4

from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.records import NewMessage
from core.state import ResponseState
from nodes.shared.clock import turn_moment
from nodes.shared.questions import store_user_message


def make_store_question(deps: Deps):
    async def store_question(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        if state.get("message_id") is not None:
            return {}
        context = runtime.context
        message = NewMessage(
            external_id=f"graph-{uuid4().hex}",
            role="user",
            content=state["text"],
            created_at=turn_moment(context).isoformat(timespec="seconds"),
        )
        stored = await asyncio.to_thread(store_user_message, deps, context.user_id, message)
        return {"message_id": stored.row["id"]}

    return store_question
