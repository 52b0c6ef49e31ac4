"""Topology snapshot of the media graph: each step's fallback edge is drawn and labelled."""

from __future__ import annotations

from core.deps import Deps
from graphs.media import build_media_graph
from tests.support.topology import drawn_edges, edges

TRANSCRIBE_FALLBACK = "no_endpoint / api_error / timeout / invalid_output / empty_reply"
DESCRIBE_FALLBACK = "no_model / api_error / timeout / empty_reply"


def test_the_media_graph_has_exactly_the_expected_edges(deps: Deps) -> None:
    assert drawn_edges(build_media_graph(deps)) == edges(f"""
        __start__ --> transcribe
        transcribe -. transcripts .-> describe
        transcribe -. {TRANSCRIBE_FALLBACK} .-> transcribe_by_model
        transcribe_by_model -. transcripts .-> describe
        transcribe_by_model -. {DESCRIBE_FALLBACK} .-> keep_voice_label
        keep_voice_label --> describe
        describe -. descriptions .-> save
        describe -. {DESCRIBE_FALLBACK} .-> keep_photo_label
        keep_photo_label --> save
        save --> __end__
    """)
