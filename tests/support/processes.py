"""For tests that start processes: a free loopback port and a clean environment."""

from __future__ import annotations

import os
import socket


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


STORE_VARIABLES = ("TOPICA_DATABASE_URL", "TOPICA_DATABASE_SCHEMA")


def environment_without(*prefixes: str) -> dict[str, str]:
    """This process's environment less every variable starting with one of `prefixes`,
    except the test's store engine (a test on PostgreSQL starts processes on it too)."""
    return {
        key: value
        for key, value in os.environ.items()
        if key in STORE_VARIABLES or not key.startswith(prefixes)
    }


def untraced_environment() -> dict[str, str]:
    """No Topica configuration and no LangSmith/LangChain variables (so no tracing)."""
    return environment_without("LANGSMITH_", "LANGCHAIN_", "TOPICA_")
