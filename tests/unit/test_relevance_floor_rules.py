"""The relevance floor: a gate on each signal's best hit, and its calibration on the null
distribution (the best scores of unrelated questions), checked leave-one-out."""

from __future__ import annotations

from bench.relevance_floor import (
    ConversationScores,
    calibrate,
    cross_validate,
    gated_share,
    null_floor,
)
from nodes.response.relevance import RelevanceFloors, best_scores, clears_floor

FLOORS = RelevanceFloors(message_vectors=0.5, topic_vectors=0.4, message_bm25=3.0, topic_bm25=2.0)


def best(mv=None, tv=None, mb=None, tb=None):
    return {"message_vectors": mv, "topic_vectors": tv, "message_bm25": mb, "topic_bm25": tb}


def test_the_best_hit_of_each_signal_counts_and_one_signal_over_its_floor_is_enough():
    scores = best_scores({"message_vectors": [(1, 0.2), (2, 0.45)], "message_bm25": []})
    assert scores == best(mv=0.45)
    assert not clears_floor(scores, FLOORS)
    assert clears_floor(best(mv=0.45, tb=2.0), FLOORS)  # at the floor clears it
    assert clears_floor(best(mv=0.5), FLOORS)
    assert not clears_floor(best(), FLOORS)  # no hit at all: nothing


def test_a_floor_is_the_95th_percentile_of_unrelated_best_scores():
    scores = [i / 100 for i in range(101)]  # 0.00 .. 1.00
    assert abs(null_floor(scores) - 0.95) < 1e-9
    # Most unrelated questions with no hit: any hit is unusual, so any hit clears.
    assert null_floor([None] * 97 + [5.0, 6.0, 7.0]) == 0.0
    floors = calibrate([best(mv=i / 100, tv=0.1) for i in range(101)])
    assert abs(floors.message_vectors - 0.95) < 1e-9 and abs(floors.topic_vectors - 0.1) < 1e-9
    assert floors.message_bm25 == floors.topic_bm25 == 0.0


def test_leave_one_out_measures_floors_on_what_they_were_not_calibrated_on():
    runs = [
        ConversationScores(
            f"c{n}",
            memory=[best(mv=0.9), best(mv=0.2 + n / 100)],
            unrelated=[best(mv=k / 10 + n / 100) for k in range(6)],
        )
        for n in range(3)
    ]
    folds = cross_validate(runs)
    assert [(f["held_out"], f["unrelated_half"]) for f in folds] == [
        (f"c{n}", half) for n in range(3) for half in (0, 1)
    ]
    first = folds[0]
    others = [b for run in runs[1:] for i, b in enumerate(run.unrelated) if i % 2 == 1]
    assert first["floors"] == calibrate(others).__dict__
    held = [b for i, b in enumerate(runs[0].unrelated) if i % 2 == 0]
    assert first["unrelated_nothing"] == gated_share(held, calibrate(others))
    assert first["memory_turned_away"] == 0.5  # the 0.9 question clears, the 0.2 one not
