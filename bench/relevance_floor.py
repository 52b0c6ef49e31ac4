"""`topica eval floor`: calibrate the relevance floor of each retrieval signal on data.

Each LoCoMo conversation is ingested as `topica eval locomo` does; then two sets of
questions are put to its memory through the four signals of the topic search (message
vectors, topic vectors, BM25 over messages, BM25 over topic summaries): LoCoMo's own
answerable questions (memory holds their evidence) and questions no memory answers
(general-knowledge and everyday ones: tests/data/unrelated_questions.json and
everyday_questions.json, English and Russian). Only each signal's best score per
question is kept, with the share of its content words memory holds (`WORDS`).

The floor of a signal is the `NULL_QUANTILE` (95th) percentile of its best score over
the unrelated questions: the null distribution, what an unrelated question reaches by
chance. The word-share floor is the `WORD_SHARE_QUANTILE` point of the answerable
questions' word shares. A turn is about memory when any signal reaches its floor and
the question's word share reaches its own (nodes.response.ranking.floors).
Checked leave-one-conversation-out, with the unrelated questions split in two halves as
well (floors from four conversations and one half, measured on the fifth and the other
half): how many LoCoMo questions the gate would turn away (recall lost) and how many
unrelated questions it answers with "nothing". The vector floors' growth with the size of
the memory is fitted and checked the same way (`bench.floor_sizes`). Whether a question
names something memory names (the gate's rule under every floor) is recorded with each
question (`NAMES`) and counted in both shares.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from bench.corpus import Corpus
from bench.eval_locomo import ANSWERABLE, USER_ID, ingest
from bench.floor_sizes import MemoryCosines, by_size, show_by_size
from bench.locomo import Question, load_conversations
from bench.metrics import percentile
from bench.word_sizes import MemoryWords, first_evidence, memory_words, word_curve
from core.deps import Deps
from core.progress import ProgressBoard, progress_board
from core.settings import Settings
from core.tuning import Tuning, embedder_name, load_tuning, profile_path
from nodes.response.gate import named_in_memory, word_share
from nodes.response.ranking.floors import (
    NULL_QUANTILE,
    SIGNALS,
    WORD_SHARE_QUANTILE,
    RelevanceFloors,
    Signal,
    best_scores,
    clears_floor,
)
from stores.embedders import build_embedder

Best = dict[str, float | None]
NAMES = "names"
"""1.0 where the question names something memory names (`nodes.response.search`)."""
WORDS = "word_share"
"""The share of the question's content words memory holds (`nodes.response.gate`)."""
NO_HIT = -1e9
"""The score of a question with no hit in a signal: below every real score."""
HITS = 50
"""Hits per signal, as the search takes them (`message_hits_count`, a topic list of 50)."""


def signal_hits(deps: Deps, user_id: int, query: str) -> dict[Signal, list[tuple[int, float]]]:
    """The four signals' hits for one query, as `nodes.response.search` reads them."""
    vector = deps.embedder.encode_query(query)
    return {
        "message_vectors": deps.vectors.query("messages", user_id, vector, HITS),
        "topic_vectors": deps.vectors.query("topics", user_id, vector, HITS),
        "message_bm25": deps.store.messages.search(user_id, query, HITS),
        "topic_bm25": deps.store.topics.search(user_id, query, HITS),
    }


@dataclass
class ConversationScores:
    sample_id: str
    memory: list[Best] = field(default_factory=list)
    """Best score per signal of each answerable LoCoMo question with evidence."""
    unrelated: list[Best] = field(default_factory=list)
    """...of each unrelated question, in the file's order (English, then Russian)."""
    cosines: MemoryCosines | None = None
    """Every question's cosine to every message and topic, for the floors by size."""
    words: MemoryWords | None = None
    """The messages' words and the answerable questions', for the word floor by size."""


def memory_cosines(
    corpus: Corpus, asked: Sequence[Question], unrelated: Sequence[str]
) -> MemoryCosines:
    deps, user_id = corpus.deps, corpus.user_id
    topics = deps.store.topics.all_of(user_id)
    ids = [topic["id"] for topic in topics]
    members = deps.store.messages.external_ids_by_topic(user_id, ids)
    vectors = deps.vectors.vectors("topics", user_id, ids)
    return MemoryCosines.of(
        corpus.conversation.sample_id,
        corpus.message_vectors,
        np.stack([vectors[i] for i in ids if i in vectors]),
        [[corpus.position[e] for e in members[i]] for i in ids if i in vectors],
        np.stack([deps.embedder.encode_query(text) for text in unrelated]),
        np.stack([deps.embedder.encode_query(q.question) for q in asked]),
        [first_evidence(corpus, q) for q in asked],
    )


def null_floor(scores: Sequence[float | None], quantile: float = NULL_QUANTILE) -> float:
    """The score the best hit of an unrelated question reaches `1 - quantile` of the time.
    A question with no hit at all counts as below everything; when most have none, any
    hit clears (the floor is 0: BM25 scores and useful cosines are positive)."""
    values = [score if score is not None else NO_HIT for score in scores]
    floor = percentile(values, quantile * 100)
    return floor if floor is not None and floor > 0 else 0.0


def calibrate(unrelated: Sequence[Best]) -> RelevanceFloors:
    return RelevanceFloors(**{s: null_floor([best[s] for best in unrelated]) for s in SIGNALS})


def word_floor(memory: Sequence[Best], quantile: float = WORD_SHARE_QUANTILE) -> float:
    """The word share under which only `quantile` of the answerable questions fall."""
    floor = percentile([words_of(best) for best in memory], quantile * 100)
    return floor or 0.0


def words_of(best: Best) -> float:
    """The question's word share (1.0 where it was not measured)."""
    share = best.get(WORDS, 1.0)
    return 1.0 if share is None else share


def gated_share(questions: Sequence[Best], floors: RelevanceFloors, words: float = 0.0) -> float:
    """The share of questions whose best hits all stay under the floors, or whose word
    share stays under `words`, and that name nothing memory names ("nothing"). The gate's
    exemption of a question whose nearest message is in another script is left out: a
    benchmark conversation and its questions are in one language."""
    if not questions:
        return 0.0
    return sum(
        not (clears_floor(best, floors) and words_of(best) >= words) and not best.get(NAMES)
        for best in questions
    ) / len(questions)


def cross_validate(runs: Sequence[ConversationScores]) -> list[dict[str, Any]]:
    """Leave one conversation out, and one half of the unrelated questions: floors from
    the rest, measured on what was left out."""
    rows = []
    for held in runs:
        others = [run for run in runs if run is not held]
        for half in (0, 1):
            train = [b for run in others for i, b in enumerate(run.unrelated) if i % 2 != half]
            test = [b for i, b in enumerate(held.unrelated) if i % 2 == half]
            floors = calibrate(train)
            words = word_floor([b for run in others for b in run.memory])
            rows.append(
                {
                    "held_out": held.sample_id,
                    "unrelated_half": half,
                    "floors": floors.__dict__,
                    "word_share_floor": words,
                    "memory_questions": len(held.memory),
                    "memory_turned_away": gated_share(held.memory, floors, words),
                    "unrelated_nothing": gated_share(test, floors, words),
                }
            )
    return rows


def distribution(questions: Sequence[Best], signal: Signal) -> dict[str, float | None]:
    values = [best[signal] for best in questions if best[signal] is not None]
    return {
        "with_hits": len(values) / len(questions) if questions else None,
        "p5": percentile(values, 5),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
    }


async def score_conversation(
    conversation, unrelated: Sequence[str], settings: Settings, embedder, progress: ProgressBoard
) -> ConversationScores:
    data_dir = Path(tempfile.mkdtemp(prefix=f"topica-floor-{conversation.sample_id}-"))
    try:
        corpus, _ = await ingest(settings, embedder, conversation, data_dir, progress)
        deps = corpus.deps
        try:
            known = set(corpus.order)
            asked_questions = [
                q
                for q in conversation.questions
                if q.category in ANSWERABLE and any(i in known for i in q.evidence)
            ]
            asked = [q.question for q in asked_questions]
            scores = ConversationScores(conversation.sample_id)
            scores.cosines = await asyncio.to_thread(
                memory_cosines, corpus, asked_questions, unrelated
            )
            scores.words = memory_words(corpus, asked_questions)
            task = progress.task(
                f"{conversation.sample_id}: questions", len(asked) + len(unrelated), "questions"
            )
            for target, questions in ((scores.memory, asked), (scores.unrelated, unrelated)):
                for question in questions:
                    hits = await asyncio.to_thread(signal_hits, deps, USER_ID, question)
                    best: Best = dict(best_scores(hits))
                    named = await asyncio.to_thread(named_in_memory, deps, USER_ID, [question])
                    best[NAMES] = 1.0 if named else None
                    best[WORDS] = await asyncio.to_thread(word_share, deps, USER_ID, [question])
                    target.append(best)
                    task.advance()
            task.finish(remove=True)
            return scores
        finally:
            deps.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def load_unrelated(*paths: Path) -> list[str]:
    """The questions of each file (JSON: `en` and `ru` lists), file after file."""
    questions = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        questions += [*data["en"], *data["ru"]]
    return questions


def by_file(null: Sequence[Best], paths: Sequence[Path], conversations: int) -> dict[str, Any]:
    """The questions of each file among `null` (every conversation's unrelated questions,
    conversation after conversation), keyed by file name."""
    sizes = [len(load_unrelated(path)) for path in paths]
    per_run = sum(sizes)
    found: dict[str, list[Best]] = {path.name: [] for path in paths}
    for run in range(conversations):
        start = run * per_run
        for path, size in zip(paths, sizes, strict=True):
            found[path.name] += null[start : start + size]
            start += size
    return found


async def eval_floor(
    data: Path, unrelated_paths: Sequence[Path], settings: Settings, console=None
) -> dict[str, Any]:
    """Calibrate the floors on every conversation of `data`, with the questions of
    `unrelated_paths` as those no memory answers; the figures and their check."""
    conversations = load_conversations(data)
    if not conversations:
        raise ValueError(f"no conversations in {data}")
    unrelated = load_unrelated(*unrelated_paths)
    embedder = build_embedder(settings)
    runs = []
    with progress_board(console or Console(stderr=True)) as progress:
        for conversation in conversations:
            runs.append(
                await score_conversation(conversation, unrelated, settings, embedder, progress)
            )
    memory = [best for run in runs for best in run.memory]
    null = [best for run in runs for best in run.unrelated]
    floors, words = calibrate(null), word_floor(memory)
    sizes = by_size([run.cosines for run in runs if run.cosines is not None])
    curve = word_curve([run.words for run in runs if run.words is not None])
    sizes["curves"]["words"] = {**asdict(curve), "cap": words}
    folds = cross_validate(runs)
    return {
        "quantile": NULL_QUANTILE,
        "word_share_quantile": WORD_SHARE_QUANTILE,
        "word_share_floor": words,
        "conversations": [run.sample_id for run in runs],
        "memory_questions": len(memory),
        "unrelated_questions": len(unrelated),
        "floors": floors.__dict__,
        "distributions": {
            signal: {
                "memory": distribution(memory, signal),
                "unrelated": distribution(null, signal),
            }
            for signal in SIGNALS
        },
        "all_data": {
            "memory_turned_away": gated_share(memory, floors, words),
            "unrelated_nothing": gated_share(null, floors, words),
            "nothing_by_file": {
                name: gated_share(questions, floors, words)
                for name, questions in by_file(null, unrelated_paths, len(runs)).items()
            },
        },
        "cross_validation": folds,
        "scores": {
            run.sample_id: {"memory": run.memory, "unrelated": run.unrelated} for run in runs
        },
        "by_size": sizes,
        "cross_validation_mean": {
            key: sum(fold[key] for fold in folds) / len(folds)
            for key in ("memory_turned_away", "unrelated_nothing")
        },
    }


def show_floor(result: dict[str, Any], out) -> None:
    out.print(
        f"Relevance floors: the {result['quantile']:.0%} point of each signal's best score "
        f"over {result['unrelated_questions']} unrelated questions × "
        f"{len(result['conversations'])} LoCoMo memories "
        f"({result['memory_questions']} LoCoMo questions for comparison)"
    )
    for signal in SIGNALS:
        memory = result["distributions"][signal]["memory"]
        null = result["distributions"][signal]["unrelated"]
        out.print(
            f"  {signal:16} floor {result['floors'][signal]:8.3f}   "
            f"LoCoMo best p5/p50 {fmt(memory['p5'])}/{fmt(memory['p50'])} "
            f"(hits {fmt(memory['with_hits'])})   "
            f"unrelated p50/p95 {fmt(null['p50'])}/{fmt(null['p95'])} "
            f"(hits {fmt(null['with_hits'])})"
        )
    out.print(
        f"  {'word share':16} floor {result['word_share_floor']:8.3f}   "
        f"the {result['word_share_quantile']:.0%} point of the LoCoMo questions' shares"
    )
    whole = result["all_data"]
    files = ", ".join(f"{name} {share:.1%}" for name, share in whole["nothing_by_file"].items())
    out.print(
        f"On all data: LoCoMo questions turned away {whole['memory_turned_away']:.1%}, "
        f"unrelated answered 'nothing' {whole['unrelated_nothing']:.1%} ({files})"
    )
    out.print("Leave one conversation (and one half of the unrelated questions) out:")
    for fold in result["cross_validation"]:
        out.print(
            f"  {fold['held_out']:10} half {fold['unrelated_half']}: turned away "
            f"{fold['memory_turned_away']:.1%} of {fold['memory_questions']}, "
            f"'nothing' {fold['unrelated_nothing']:.1%}"
        )
    mean = result["cross_validation_mean"]
    out.print(
        f"  mean: turned away {mean['memory_turned_away']:.1%}, "
        f"'nothing' {mean['unrelated_nothing']:.1%}"
    )
    show_by_size(result["by_size"], out)


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def calibrated(result: dict[str, Any], tuning: Tuning) -> Tuning:
    """`tuning` with the floors and size curves of an `eval_floor` result."""
    floors, curves = result["floors"], result["by_size"]["curves"]
    return replace(
        tuning,
        message_vector_floor=floors["message_vectors"],
        topic_vector_floor=floors["topic_vectors"],
        message_bm25_floor=floors["message_bm25"],
        topic_bm25_floor=floors["topic_bm25"],
        word_share_floor=result["word_share_floor"],
        word_share_floor_base=curves["words"]["base"],
        word_share_floor_per_log=curves["words"]["per_log"],
        message_vector_floor_base=curves["messages"]["base"],
        message_vector_floor_per_log=curves["messages"]["per_log"],
        topic_vector_floor_base=curves["topics"]["base"],
        topic_vector_floor_per_log=curves["topics"]["per_log"],
    )


def save_profile(result: dict[str, Any], settings: Settings) -> Path:
    """Write the calibrated floors into the data directory's profile of the configured
    embedder (the other values kept from its current profile); the profile's path."""
    embedder = embedder_name(settings)
    tuning = calibrated(result, load_tuning(settings.data_dir, embedder))
    path = profile_path(settings.data_dir, embedder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(tuning), indent=2) + "\n", encoding="utf-8")
    return path
