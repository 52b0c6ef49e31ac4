"""The relevance floor: a gate on each signal's best hit, and its calibration on the null
distribution (the best scores of unrelated questions), checked leave-one-out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.floor_sizes import SIZES, MemoryCosines, by_size, fit_curves
from bench.relevance_floor import (
    NAMES,
    WORDS,
    ConversationScores,
    by_file,
    calibrate,
    cross_validate,
    gated_share,
    load_unrelated,
    null_floor,
    word_floor,
)
from bench.word_sizes import MemoryWords, word_curve
from nodes.response.ranking.floors import (
    RelevanceFloors,
    SizeCurve,
    best_scores,
    clears_floor,
    name_words,
    written_as_a_name,
)

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


def test_the_word_share_floor_is_the_lowest_share_of_an_answerable_question():
    memory = [{**best(mv=0.9), WORDS: share} for share in (1.0, 0.2, 0.5)]
    assert word_floor(memory) == 0.2
    assert word_floor(memory, 0.5) == 0.5
    unrelated = [
        {**best(mv=0.9), WORDS: 0.0},  # over a score floor, but no word in memory
        {**best(mv=0.9), WORDS: 0.2},  # at the word floor: relevant
        {**best(mv=0.1), WORDS: 1.0},  # every word, under every score floor
        {**best(mv=0.9), WORDS: 0.0, NAMES: 1.0},  # a name memory writes: relevant
    ]
    assert gated_share(unrelated, FLOORS, 0.2) == 0.5
    assert gated_share(unrelated, FLOORS) == 0.25  # no word floor: the scores alone
    runs = [
        ConversationScores("a", memory=memory[:2], unrelated=unrelated),
        ConversationScores("b", memory=memory[2:], unrelated=unrelated),
    ]
    folds = cross_validate(runs)
    assert [fold["word_share_floor"] for fold in folds] == [0.5, 0.5, 0.2, 0.2]
    assert folds[0]["memory_turned_away"] == 0.5  # the 0.2 question, under b's 0.5


def test_the_unrelated_questions_of_each_file_are_told_apart(tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"en": ["a", "b"], "ru": ["в"]}), "utf-8")
    second.write_text(json.dumps({"en": ["d"], "ru": []}), "utf-8")
    assert load_unrelated(first, second) == ["a", "b", "в", "d"]
    null = [best(mv=conversation + i / 10) for conversation in (0, 1) for i in range(4)]
    files = by_file(null, [first, second], conversations=2)
    assert files == {"first.json": null[0:3] + null[4:7], "second.json": [null[3], null[7]]}


def test_a_vector_floor_grows_with_the_memory_and_stops_at_the_calibrated_one():
    curve = SizeCurve(base=0.16, per_log=0.03, cap=0.374)
    assert curve.at(1) == curve.at(0) == 0.16
    assert curve.at(4) < curve.at(64) < curve.cap
    assert curve.at(curve.saturation) == curve.cap
    assert curve.at(curve.saturation - 1) < curve.cap  # counting further changes nothing
    assert curve.at(10**9) == curve.cap
    assert SizeCurve(0.3, 0.0, 0.3).saturation == 1  # a fixed floor needs no count


def synthetic_memory(rng: np.random.Generator, name: str, messages: int = 300) -> MemoryCosines:
    """Unrelated questions: cosines drawn around 0.1 to every message (around 0.05 to every
    topic of ten messages); each LoCoMo-like question reaches 0.35 on its evidence message
    and 0.15 on its topic, the rest like an unrelated one."""
    topics = messages // 10
    evidence = [int(p) for p in rng.integers(0, messages, 40)]
    asked_messages = rng.normal(0.1, 0.08, (40, messages))
    asked_topics = rng.normal(0.05, 0.05, (40, topics))
    for row, position in enumerate(evidence):
        asked_messages[row, position] = 0.35
        asked_topics[row, position // 10] = 0.15
    return MemoryCosines(
        name,
        unrelated_messages=rng.normal(0.1, 0.08, (60, messages)),
        unrelated_topics=rng.normal(0.05, 0.05, (60, topics)),
        memory_messages=asked_messages,
        memory_topics=asked_topics,
        spans=[list(range(t * 10, t * 10 + 10)) for t in range(topics)],
        evidence=evidence,
    )


def test_floors_by_size_let_small_memories_through_and_still_say_nothing_to_the_unrelated():
    rng = np.random.default_rng(7)
    memories = [synthetic_memory(rng, name) for name in "abcde"]
    curves = fit_curves(memories)
    assert curves["messages"].per_log > 0 and curves["topics"].per_log > 0
    # The cap is the fixed floor: the 95th percentile of the whole memories' best scores.
    whole = np.concatenate([m.unrelated_messages.max(axis=1) for m in memories])
    assert abs(curves["messages"].cap - np.percentile(whole, 95)) < 1e-12
    rows = {row["messages"]: row for row in by_size(memories)["leave_one_out"]}
    assert set(rows) == {*SIZES, "whole memory"}
    four = rows[4]
    # Fixed floors (those of 300-message memories) turn most 0.35 questions away in a
    # four-message memory; the floors of that size do not.
    assert four["fixed_turned_away"] > 0.5 > 0.1 > four["by_size_turned_away"]
    assert four["by_size_nothing"] > 0.8  # about 95% per signal, two signals
    # Where the memory is as large as the calibration, the two agree.
    assert rows["whole memory"]["by_size_turned_away"] == rows["whole memory"]["fixed_turned_away"]


def test_names_are_the_words_a_question_capitalises_inside_a_sentence():
    assert name_words("Who is Anthony?") == ["Anthony"]
    assert name_words("Что сказал ветеринар про Марципана? Кто он") == ["Марципана"]
    assert name_words("Anthony called. What did he say?") == []  # first words are capitalised
    assert name_words("Did the API of NASA and Bo change?") == []  # acronyms, short words
    assert name_words("Have you read The Hobbit?") == ["The", "Hobbit"]


def test_a_word_is_written_as_a_name_where_memory_never_writes_it_in_lower_case():
    assert written_as_a_name("Anthony", ["A story. Anthony and I went out.", "Anthony's cat"])
    assert written_as_a_name("Марципана", ["Отвёз Марципан к врачу", "Марципану лучше"])
    assert not written_as_a_name("The", ["The end.", "the cat"])  # capitalised only at starts
    assert not written_as_a_name("Rose", ["Rose came.", "a rose garden"])
    assert not written_as_a_name("Anthony", ["nobody of that name"])
    assert not written_as_a_name("Anthony", [])


def test_a_word_counts_where_a_message_of_the_window_starts_with_its_first_letters():
    memory = MemoryWords.of(
        ["I adopted a grey cat.", "Rowing on the river.", "Марципану лучше"],
        [("Which river do you row on?", 1), ("Как Марципан?", 2)],
    )
    assert memory.questions == [["river", "row"], ["марци"]]  # stems, stopwords left out
    assert memory.share(["river", "row"], 1, 2) == 1.0  # "rowing" starts with "row"
    assert memory.share(["river", "row"], 0, 1) == 0.0
    assert memory.share(["марци"], 0, 3) == 1.0
    assert memory.window(0, 2) == (0, 2) and memory.window(2, 2) == (1, 3)
    assert memory.window(1, 256) == (0, 3)


def test_the_word_floor_is_lower_in_smaller_memories():
    # Each question's words are spread over the eight messages before its evidence: a
    # window of two holds one of them, a window of the whole memory all.
    contents = [f"w{i:03d}zq" for i in range(300)]  # first five letters: one word each
    asked = [(" ".join(f"w{(p - k) % 300:03d}z" for k in range(8)), p) for p in range(10, 290, 7)]
    curve = word_curve([MemoryWords.of(contents, asked)])
    assert curve.per_log > 0
    assert curve.cap == 1.0
    assert curve.at(2) < curve.at(16) <= curve.cap
