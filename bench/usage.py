"""Attaching a callback handler to LangChain runs whose config the harness does not build.

Retrieval runs take the handler in their config (`{"callbacks": [usage]}`). The memory
pipeline's `archive_user` builds its own run config, so ingestion is counted by a
configure hook instead: every LangChain run started inside `counting_all(handler)`
(in this context, subgraphs and nodes included) reports to the handler as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

_ambient: ContextVar[BaseCallbackHandler | None] = ContextVar(
    "topica_bench_ambient_callback", default=None
)
register_configure_hook(_ambient, inheritable=True)


@contextmanager
def counting_all(handler: BaseCallbackHandler) -> Iterator[BaseCallbackHandler]:
    """Attach `handler` to every LangChain run started inside the block."""
    token = _ambient.set(handler)
    try:
        yield handler
    finally:
        _ambient.reset(token)
