"""Calibration profiles: the packaged one, a data directory's own, and a broken one."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from core.context import ResponseContext
from core.settings import EmbeddingsProvider, Settings
from core.tuning import (
    BUNDLED_EMBEDDER,
    embedder_name,
    load_tuning,
    packaged_tuning,
    profile_path,
)


def write_profile(data_dir: Path, embedder: str, **changes: object) -> None:
    path = profile_path(data_dir, embedder)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**asdict(packaged_tuning()), **changes}), "utf-8")


def test_a_data_directorys_profile_wins_over_the_packaged_one(tmp_path: Path) -> None:
    assert load_tuning(tmp_path, BUNDLED_EMBEDDER) == packaged_tuning()
    write_profile(tmp_path, BUNDLED_EMBEDDER, message_vector_floor=0.5)
    assert load_tuning(tmp_path, BUNDLED_EMBEDDER).message_vector_floor == 0.5
    settings = Settings.model_construct(data_dir=tmp_path)
    context = ResponseContext.from_settings(settings, user_id=1)
    assert context.tuning.message_vector_floor == 0.5
    assert ResponseContext(user_id=1).tuning == packaged_tuning()


def test_an_embedder_without_a_profile_reads_the_bundled_ones(tmp_path: Path) -> None:
    assert load_tuning(tmp_path, "text-embedding-3-small") == packaged_tuning()
    remote = Settings.model_construct(
        embeddings_provider=EmbeddingsProvider.OPENAI, embeddings_model="m"
    )
    assert embedder_name(remote) == "m"
    assert embedder_name(Settings.model_construct()) == BUNDLED_EMBEDDER


def test_a_profile_missing_a_field_is_one_clear_error(tmp_path: Path) -> None:
    path = profile_path(tmp_path, BUNDLED_EMBEDDER)
    path.parent.mkdir(parents=True)
    values = asdict(packaged_tuning())
    del values["rrf_k"]
    path.write_text(json.dumps({**values, "rrf": 1}), "utf-8")
    with pytest.raises(ValueError, match="lacks rrf_k"):
        load_tuning(tmp_path, BUNDLED_EMBEDDER)


def test_a_context_changes_its_tuning_without_touching_the_profile() -> None:
    context = ResponseContext(user_id=1).tuned(excerpt_lead_hits=0)
    assert context.tuning.excerpt_lead_hits == 0
    assert packaged_tuning().excerpt_lead_hits != 0


def test_eval_floors_saved_profile_is_the_one_a_turn_then_reads(tmp_path: Path) -> None:
    from bench.relevance_floor import save_profile

    floors = {"message_vectors": 0.41, "topic_vectors": 0.2, "message_bm25": 7.0}
    curves = {
        "messages": {"base": 0.15, "per_log": 0.03, "cap": 0.41},
        "topics": {"base": 0.1, "per_log": 0.02, "cap": 0.2},
        "words": {"base": -0.1, "per_log": 0.05, "cap": 0.25},
    }
    result = {
        "floors": {**floors, "topic_bm25": 3.0},
        "by_size": {"curves": curves},
        "word_share_floor": 0.25,
    }
    settings = Settings.model_construct(data_dir=tmp_path)
    path = save_profile(result, settings)
    assert path == profile_path(tmp_path, BUNDLED_EMBEDDER)
    tuning = ResponseContext.from_settings(settings, user_id=1).tuning
    assert (tuning.message_vector_floor, tuning.topic_bm25_floor) == (0.41, 3.0)
    assert (tuning.message_vector_floor_base, tuning.topic_vector_floor_per_log) == (0.15, 0.02)
    assert (tuning.word_share_floor, tuning.word_share_floor_per_log) == (0.25, 0.05)
    assert tuning.rrf_k == packaged_tuning().rrf_k
