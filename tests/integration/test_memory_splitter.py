"""The split step with scripted Splitter replies: bad proposals are repaired by `validate`,
unusable replies take the `segment` fallback edge, good ones become the topics."""

from __future__ import annotations

import json

import pytest

from app.memory import archive_user
from core.deps import Deps
from core.records import MessageRow
from nodes.memory.coverage import GENERAL_SUMMARY
from nodes.memory.splitter import make_split
from tests.support.memory import MEMORY_NODES, memberships, node_path
from tests.support.messages import ids
from tests.support.models import with_models

# User 1's messages, stored by the `stored` fixture (conftest.py).
CONVERSATION = [
    "My right knee hurts after long runs, outside of the knee.",
    "That sounds like IT band syndrome; reduce the long run and see a physio.",
    "Should I skip the half-marathon in Berlin then?",
    "Not necessarily: five weeks is enough if the pain settles within a week.",
    "Different topic: how do I upgrade Postgres 14 to 16 in Docker Compose?",
    "Use pg_dumpall into a new volume, or pg_upgrade with both binaries.",
    "Спасибо! А что подарить маме на юбилей?",
    "Может быть, планшет с крупным шрифтом и фотографиями внуков?",
    "Our cat Marzipan barely eats since Monday.",
    "Take him to the vet soon, cats should not fast for days.",
]


async def test_gaps_overlaps_and_out_of_range_ids_still_cover_every_message_once(
    deps: Deps, stored: list[MessageRow], fake_model
):
    m = ids(stored)
    splitter = fake_model(
        {
            "topics": [
                {
                    "summary": "Knee pain and the half-marathon",
                    "start_msg_id": m[0],
                    "end_msg_id": m[3],
                },
                {"summary": "Postgres upgrade", "start_msg_id": m[2], "end_msg_id": m[5]},
                {
                    "summary": "Marzipan is not eating",
                    "start_msg_id": m[8],
                    "end_msg_id": m[9] + 50,
                },
            ],
            "stragglers": [m[6], m[7]],
        }
    )

    [result] = await archive_user(with_models(deps, splitter=splitter), 1, archive_all=True)

    assert result["split_by"] == "llm" and result["split_fallback"] is None
    assert result["coverage"]["overlaps_resolved"] == 1
    assert result["coverage"]["clamped"] == 1
    assert result["coverage"]["uncovered"] == m[6:8]
    assert result["merges"] == []
    topics = memberships(deps, 1)
    assert [members for _, members in topics] == [m[0:4], m[4:6], m[6:8], m[8:10]]
    assert [summary for summary, _ in topics][:2] == [
        "Knee pain and the half-marathon",
        "Postgres upgrade",
    ]
    assert topics[2][0].startswith(GENERAL_SUMMARY)
    assert topics[3][0] == "Marzipan is not eating"
    assert deps.store.messages.unarchived(1) == []
    assert deps.vectors.count("topics", 1) == 4


async def test_the_splitter_sees_the_chunk_with_ids_and_is_asked_for_json(
    deps: Deps, stored: list[MessageRow], fake_model
):
    deps.store.facts.add(1, "Name is Alexei, lives in Berlin", "identity", 90)
    m = ids(stored)
    splitter = fake_model(
        {"topics": [{"summary": "All", "start_msg_id": m[0], "end_msg_id": m[-1]}]}
    )

    await archive_user(with_models(deps, splitter=splitter), 1, archive_all=True)

    [prompt] = splitter.prompts
    request = prompt[-1].content
    assert f"[id={m[0]}]" in request and f"[id={m[-1]}]" in request
    assert "Marzipan barely eats" in request
    assert "Name is Alexei, lives in Berlin" in request
    assert splitter.call_kwargs[0]["response_format"] == {"type": "json_object"}


async def test_a_valid_reply_becomes_the_topics_with_its_summaries(
    deps: Deps, stored: list[MessageRow], fake_model
):
    m = ids(stored)
    proposals = [
        ("Колено и полумарафон", m[0], m[3]),
        ("Postgres 14 → 16 in Docker", m[4], m[5]),
        ("Подарок маме", m[6], m[7]),
        ("Marzipan stopped eating", m[8], m[9]),
    ]
    reply = {
        "topics": [
            {"summary": summary, "start_msg_id": start, "end_msg_id": end}
            for summary, start, end in proposals
        ],
        "stragglers": [],
    }
    splitter = fake_model(f"```json\n{json.dumps(reply)}\n```")

    [result] = await archive_user(with_models(deps, splitter=splitter), 1, archive_all=True)

    assert result["split_by"] == "llm"
    assert result["coverage"]["uncovered"] == []
    assert memberships(deps, 1) == [
        (summary, m[m.index(start) : m.index(end) + 1]) for summary, start, end in proposals
    ]


BAD_REPLIES = {
    "prose": ("Sure! The topics are: the knee, Postgres, a gift and the cat.", "invalid_output"),
    "truncated-json": ('{"topics": [{"summary": "Knee", "start_msg_id": 1,', "invalid_output"),
    "no-topics": ('{"topics": [], "stragglers": []}', "invalid_output"),
    "wrong-shape": ('[{"title": "Knee"}]', "invalid_output"),
    "empty": ("", "empty_reply"),
}


@pytest.mark.parametrize(("reply", "reason"), BAD_REPLIES.values(), ids=BAD_REPLIES.keys())
async def test_an_unusable_reply_takes_the_segment_edge_and_records_why(
    deps: Deps, stored: list[MessageRow], fake_model, reply: str, reason: str
):
    splitter_deps = with_models(deps, splitter=fake_model(reply))

    [result] = await archive_user(splitter_deps, 1, archive_all=True)

    assert result["split_fallback"] == reason
    assert result["split_by"] == "embeddings"
    assert result["proposals"], "the embedding segmentation proposed the topics"
    covered = sorted(i for _, members in memberships(deps, 1) for i in members)
    assert covered == ids(stored)


async def test_the_fallback_path_runs_segment_instead_of_going_straight_to_validate(
    deps: Deps, stored: list[MessageRow], fake_model
):
    broken = with_models(deps, splitter=fake_model("not json"))
    assert await node_path(broken, 1) == list(MEMORY_NODES)


async def test_a_working_splitter_skips_segment(deps: Deps, stored: list[MessageRow], fake_model):
    m = ids(stored)
    splitter = fake_model(
        {"topics": [{"summary": "All", "start_msg_id": m[0], "end_msg_id": m[-1]}]}
    )
    path = await node_path(with_models(deps, splitter=splitter), 1)
    assert "segment" not in path
    assert path[:4] == ["resummarise", "load_chunk", "split", "validate"]


async def test_a_provider_error_takes_the_segment_edge(deps: Deps, stored, fake_model, runtime_for):
    model = fake_model(error=TimeoutError("endpoint timed out"))
    split = make_split(with_models(deps, splitter=model))

    command = await split({"chunk": stored}, runtime_for(1))

    assert command.goto == "segment"
    assert command.update["split_fallback"] == "timeout"


async def test_without_a_splitter_model_the_node_routes_to_segment(deps, stored, runtime_for):
    command = await make_split(deps)({"chunk": stored}, runtime_for(1))

    assert command.goto == "segment"
    assert command.update == {"split_fallback": "no_model"}


async def test_a_good_reply_routes_the_node_to_validate_with_the_proposals(
    deps: Deps, stored: list[MessageRow], fake_model, runtime_for
):
    m = ids(stored)
    model = fake_model(
        {"topics": [{"summary": " All ", "start_msg_id": m[0], "end_msg_id": m[-1]}]}
    )

    command = await make_split(with_models(deps, splitter=model))({"chunk": stored}, runtime_for(1))

    assert command.goto == "validate"
    assert command.update == {
        "proposals": [{"summary": " All ", "start_msg_id": m[0], "end_msg_id": m[-1]}],
        "split_by": "llm",
        "split_fallback": None,
    }
