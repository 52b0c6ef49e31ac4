"""The media graph: what a group's voice messages said and its photos showed, saved as
the messages' searchable text (issue 14).

    START → transcribe ─transcripts→ describe ─descriptions→ save → END
              └─fallback→ transcribe_by_model ─transcripts→ describe
                            └─fallback→ keep_voice_label → describe
                                          describe ─fallback→ keep_photo_label → save

`transcribe` asks the transcription endpoint (`TOPICA_TRANSCRIPTION_BASE_URL`); the
multimodal describer model (`TOPICA_DESCRIBER_MODEL`) transcribes what it could not,
and describes photos; whatever neither turned into text keeps its label. `save` rewrites
the stored messages (label kept, text appended) and indexes them again.
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from core.context import MediaContext
from core.deps import Deps
from core.fallbacks import DescribeFallback, TranscribeFallback, edge_label
from core.retry import STORAGE_RETRY
from core.state import MediaInput, MediaState
from graphs.agent_step import Step, add_agent_step
from nodes.response.media import (
    keep_photo_label,
    keep_voice_label,
    make_describe,
    make_save,
    make_transcribe,
    make_transcribe_by_model,
)


def build_media_graph(deps: Deps) -> StateGraph:
    builder = StateGraph(MediaState, input_schema=MediaInput, context_schema=MediaContext)
    builder.add_node(
        "transcribe",
        make_transcribe(deps),
        destinations={
            "describe": "transcripts",
            "transcribe_by_model": edge_label(TranscribeFallback),
        },
    )
    describer_step = partial(add_agent_step, builder, reasons=edge_label(DescribeFallback))
    describer_step(
        Step("transcribe_by_model", make_transcribe_by_model(deps)),
        Step("keep_voice_label", keep_voice_label),
        then=("describe", "transcripts"),
    )
    describer_step(
        Step("describe", make_describe(deps)),
        Step("keep_photo_label", keep_photo_label),
        then=("save", "descriptions"),
    )
    builder.add_node("save", make_save(deps), retry_policy=STORAGE_RETRY)
    builder.add_edge(START, "transcribe")
    builder.add_edge("save", END)
    return builder
