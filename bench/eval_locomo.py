"""`topica eval locomo`: evidence recall of Topica and the baselines on LoCoMo, in one run.

Each conversation is ingested into a fresh data directory (one user, the memory
graph as the CLI runs it), then every question of categories 1-4 is put to
every method. Evidence ids that are malformed or not in the conversation are
counted and left out; a question left with no evidence is counted and skipped.
LLM calls and prompt tokens are counted by a callback handler, for ingestion
(per stored message) and for retrieval (per question), so a configured model
shows up in the figures and the offline path shows zeros.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from app.memory import archive_user
from bench import crossval
from bench.baselines import Method, Retrieval, baselines
from bench.corpus import Corpus
from bench.locomo import Conversation, Question, load_conversations
from bench.metrics import (
    count_tokens,
    evidence_fraction,
    ids_at_k,
    mean,
    ndcg_at_k,
    pack,
    percentile,
    recall_all,
    recall_any,
    render,
    whole_units,
)
from bench.topica import Topica
from bench.usage import counting_all
from core.callbacks import LLMUsage
from core.progress import ProgressBoard, progress_board
from core.settings import AGENTS, Settings
from stores.embedders import Embedder, build_embedder
from stores.services import build_deps

ANSWERABLE = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEFAULT_BUDGETS = (250, 500, 1000, 2000, 4000, 8000)
NDCG_K = 10
USER_ID = 1


@dataclass
class Answer:
    """One method's answer to one question, reduced to what the metrics need."""

    method: str
    category: int
    recall_all_at_k: dict[int, float]
    recall_any_at_k: dict[int, float]
    ndcg: float | None
    recall_all_by_budget: dict[int, float]
    recall_any_by_budget: dict[int, float]
    fraction_by_budget: dict[int, float]
    tokens_at_budget: int
    selected_tokens: int
    latency_ms: float
    llm_calls: int
    prompt_tokens: int
    recall_all_quoted: float | None = None
    """Every evidence turn among the quotes of the method's answer without a model."""


@dataclass
class EvidenceReport:
    questions: int = 0
    evaluated: int = 0
    malformed_entries: int = 0
    questions_with_malformed: int = 0
    unknown_ids: int = 0
    without_evidence: int = 0

    def add(self, other: EvidenceReport) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class ConversationRun:
    sample_id: str
    evidence: EvidenceReport
    ingest: dict[str, Any]
    answers: list[Answer] = field(default_factory=list)
    fallbacks: Counter = field(default_factory=Counter)


def usable_evidence(question: Question, known: set[str], report: EvidenceReport) -> list[str]:
    """The question's evidence ids present in the conversation; counts what was dropped."""
    report.questions += 1
    report.malformed_entries += len(question.malformed_evidence)
    report.questions_with_malformed += bool(question.malformed_evidence)
    evidence = [i for i in question.evidence if i in known]
    report.unknown_ids += len(question.evidence) - len(evidence)
    if not evidence:
        report.without_evidence += 1
    else:
        report.evaluated += 1
    return evidence


def score(
    method: Method,
    corpus: Corpus,
    retrieval: Retrieval,
    evidence: Sequence[str],
    category: int,
    *,
    ks: Sequence[int],
    budgets: Sequence[int],
    budget: int,
    unit_of: dict[str, str],
    latency_ms: float,
) -> Answer:
    units = retrieval.units
    by_key = {unit.key: unit for unit in units}
    fill = retrieval.fill if retrieval.fill is not None else whole_units(units)
    packs = {b: pack(fill, by_key, corpus.lines, b) for b in sorted({*budgets, budget})}
    selected = units[: retrieval.selected if retrieval.selected is not None else 5]
    return Answer(
        method=method.name,
        category=category,
        recall_all_at_k=(
            {k: recall_all(ids_at_k(units, k), evidence) for k in ks} if method.ranked else {}
        ),
        recall_any_at_k=(
            {k: recall_any(ids_at_k(units, k), evidence) for k in ks} if method.ranked else {}
        ),
        ndcg=(
            ndcg_at_k(units, evidence, unit_of, NDCG_K)
            if method.ranked and getattr(method, "graded", True)
            else None
        ),
        recall_all_by_budget={b: recall_all(p.message_ids, evidence) for b, p in packs.items()},
        recall_any_by_budget={b: recall_any(p.message_ids, evidence) for b, p in packs.items()},
        fraction_by_budget={
            b: evidence_fraction(p.message_ids, evidence) for b, p in packs.items()
        },
        tokens_at_budget=packs[budget].tokens,
        selected_tokens=count_tokens(render(whole_units(selected), by_key, corpus.lines)),
        latency_ms=latency_ms,
        llm_calls=retrieval.llm_calls,
        prompt_tokens=retrieval.prompt_tokens,
        recall_all_quoted=(
            recall_all(retrieval.quoted, evidence) if retrieval.quoted is not None else None
        ),
    )


def summarise(answers: Sequence[Answer], ks: Sequence[int], budget: int) -> dict[str, Any]:
    """Mean metrics of one method over questions (micro-average)."""
    if not answers:
        return {}
    ranked = bool(answers[0].recall_all_at_k)
    graded = answers[0].ndcg is not None
    budgets = sorted(answers[0].recall_all_by_budget)
    latencies = [a.latency_ms for a in answers]
    result: dict[str, Any] = {
        "questions": len(answers),
        "recall_all_at_budget": mean([a.recall_all_by_budget[budget] for a in answers]),
        "recall_any_at_budget": mean([a.recall_any_by_budget[budget] for a in answers]),
        "evidence_recall_at_budget": mean([a.fraction_by_budget[budget] for a in answers]),
    }
    for k in ks:
        result[f"recall_all_at_{k}"] = (
            mean([a.recall_all_at_k[k] for a in answers]) if ranked else None
        )
        result[f"recall_any_at_{k}"] = (
            mean([a.recall_any_at_k[k] for a in answers]) if ranked else None
        )
    result.update(
        {
            f"ndcg_at_{NDCG_K}": mean([a.ndcg for a in answers]) if graded else None,
            "mean_tokens": mean([a.selected_tokens for a in answers]),
            "mean_tokens_at_budget": mean([a.tokens_at_budget for a in answers]),
            "p50_ms": percentile(latencies, 50),
            "p95_ms": percentile(latencies, 95),
            "llm_calls_per_question": mean([a.llm_calls for a in answers]),
            "prompt_tokens_per_question": mean([a.prompt_tokens for a in answers]),
            "recall_all_by_budget": {
                str(b): mean([a.recall_all_by_budget[b] for a in answers]) for b in budgets
            },
            "recall_all_quoted": (
                mean([a.recall_all_quoted for a in answers])
                if answers[0].recall_all_quoted is not None
                else None
            ),
            "recall_all_at_budget_by_category": {
                str(category): mean(
                    [a.recall_all_by_budget[budget] for a in answers if a.category == category]
                )
                for category in sorted({a.category for a in answers})
            },
        }
    )
    return result


def by_method(answers: Sequence[Answer]) -> dict[str, list[Answer]]:
    grouped: dict[str, list[Answer]] = defaultdict(list)
    for answer in answers:
        grouped[answer.method].append(answer)
    return grouped


async def ingest(
    settings: Settings,
    embedder: Embedder,
    conversation: Conversation,
    data_dir: Path,
    progress: ProgressBoard | None = None,
) -> tuple[Corpus, dict[str, Any]]:
    """A fresh data directory (on PostgreSQL, a fresh schema, named after the directory)
    with the conversation stored and archived for one user."""
    update: dict[str, Any] = {"data_dir": data_dir}
    if settings.database_url is not None:
        update["database_schema"] = "eval_" + re.sub(r"[^a-z0-9]", "_", data_dir.name.lower())
    deps = build_deps(settings.model_copy(update=update), embedder=embedder)
    usage = LLMUsage()
    started = time.perf_counter()
    with counting_all(usage):
        await asyncio.to_thread(deps.indexer.store_messages, USER_ID, conversation.messages)
        chunks = await archive_user(deps, USER_ID, archive_all=True, progress=progress)
    seconds = time.perf_counter() - started
    corpus = await Corpus.load(deps, USER_ID, conversation)
    topics = await asyncio.to_thread(deps.store.topics.all_of, USER_ID)
    calls, prompt_tokens = usage.calls, usage.prompt_tokens
    messages = len(conversation.messages)
    return corpus, {
        "messages": messages,
        "sessions": len(conversation.sessions),
        "chunks": len(chunks),
        "topics": len(topics),
        "messages_per_topic": messages / len(topics) if topics else None,
        "merges": sum(len(chunk.get("merges", [])) for chunk in chunks),
        "split_by": dict(Counter(chunk.get("split_by", "embeddings") for chunk in chunks)),
        "seconds": seconds,
        "llm_calls": calls,
        "prompt_tokens": prompt_tokens,
        "llm_calls_per_message": calls / messages if messages else 0.0,
        "prompt_tokens_per_message": prompt_tokens / messages if messages else 0.0,
    }


async def evaluate_conversation(
    conversation: Conversation,
    methods: Sequence[Method],
    *,
    settings: Settings,
    embedder: Embedder,
    ks: Sequence[int],
    budgets: Sequence[int],
    budget: int,
    progress: ProgressBoard,
) -> ConversationRun:
    data_dir = Path(tempfile.mkdtemp(prefix=f"topica-eval-{conversation.sample_id}-"))
    try:
        corpus, ingest_report = await ingest(settings, embedder, conversation, data_dir, progress)
        try:
            for method in methods:
                await method.prepare(corpus)
            unit_maps = {method.name: dict(method.unit_of(corpus)) for method in methods}
            known = set(corpus.order)
            evidence_report = EvidenceReport()
            questions = [q for q in conversation.questions if q.category in ANSWERABLE]
            run = ConversationRun(conversation.sample_id, evidence_report, ingest_report)
            asking = progress.task(
                f"{conversation.sample_id}: questions", total=len(questions), unit="questions"
            )
            for question in questions:
                evidence = usable_evidence(question, known, evidence_report)
                if evidence:
                    await answer_question(
                        run, corpus, question, evidence, methods, unit_maps, ks, budgets, budget
                    )
                asking.advance()
            asking.finish(remove=True)
            return run
        finally:
            drop = getattr(corpus.deps.store.db, "drop_schema", None)
            if drop is not None:  # PostgreSQL: the conversation's schema goes too
                drop()
            corpus.deps.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


async def answer_question(
    run: ConversationRun,
    corpus: Corpus,
    question: Question,
    evidence: list[str],
    methods: Sequence[Method],
    unit_maps: dict[str, dict[str, str]],
    ks: Sequence[int],
    budgets: Sequence[int],
    budget: int,
) -> None:
    # The question is encoded once up front and its time added to every method that
    # embeds, so no method profits from another's cached query vector.
    started = time.perf_counter()
    await asyncio.to_thread(corpus.deps.embedder.encode_query, question.question)
    embed_ms = (time.perf_counter() - started) * 1000
    for method in methods:
        started = time.perf_counter()
        retrieval = await method.retrieve(corpus, question.question)
        latency_ms = (time.perf_counter() - started) * 1000 - retrieval.untimed_ms
        if method.uses_embedder:
            latency_ms += embed_ms
        fallback = retrieval.info.get("rerank_fallback")
        if fallback and not method.name.startswith(crossval.PREFIX):
            run.fallbacks[fallback] += 1
        run.answers.append(
            score(
                method,
                corpus,
                retrieval,
                evidence,
                question.category,
                ks=ks,
                budgets=budgets,
                budget=budget,
                unit_of=unit_maps[method.name],
                latency_ms=latency_ms,
            )
        )


def default_methods() -> list[Method]:
    return [Topica(quotes=True), Topica("topica_topics", excerpts=False), *baselines()]


async def eval_locomo(
    data: Path,
    conversations: list[str] | None,
    budget: int,
    ks: list[int],
    out: Path | None,
    settings: Settings,
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    methods: Callable[[], list[Method]] = default_methods,
    console: Console | None = None,
    cross_validate: bool = False,
) -> dict[str, Any]:
    """Evaluate every method on the LoCoMo conversations of `data` (all, or those listed).

    `ks` always includes 5 and 10; `budgets` (plus `budget`) are the points of the
    recall-against-budget curve. `methods` makes a fresh list of methods for each
    conversation (default: Topica, Topica with whole topics, and the baselines).
    Progress goes to `console` (stderr by default; `Console(quiet=True)` for none).
    With `out`, writes report.md, results.json and the plots there. Returns the
    results dict (`budget`, `conversations`, `methods`, `ingest`, `evidence`, ...).
    `cross_validate` adds the leave-one-conversation-out view of Topica's tuned weights
    (`bench.crossval`) as `cross_validation`.
    Raises ValueError for conversations not in the file.
    """
    selected = load_conversations(data, set(conversations) if conversations else None)
    if conversations:
        missing = sorted(set(conversations) - {c.sample_id for c in selected})
        if missing:
            raise ValueError(f"no such conversations in {data}: {', '.join(missing)}")
    if not selected:
        raise ValueError(f"no conversations in {data}")
    budgets = sorted({*budgets, budget})
    ks = sorted(set(ks) | {5, 10})
    embedder = build_embedder(settings)
    console = console or Console(stderr=True)
    runs: list[ConversationRun] = []
    started = time.perf_counter()
    with progress_board(console) as progress:
        overall = progress.task("conversations", total=len(selected), unit="conversations")
        for conversation in selected:
            overall.update(description=f"conversations: {conversation.sample_id}")
            instances = methods() + (crossval.variants() if cross_validate else [])
            runs.append(
                await evaluate_conversation(
                    conversation,
                    instances,
                    settings=settings,
                    embedder=embedder,
                    ks=ks,
                    budgets=budgets,
                    budget=budget,
                    progress=progress,
                )
            )
            overall.advance()
    result = results_dict(runs, settings, embedder, ks=ks, budgets=budgets, budget=budget)
    result["setup"]["methods"] = {
        method.name: getattr(method, "config", {})
        for method in instances
        if not method.name.startswith(crossval.PREFIX)
    }
    if cross_validate:
        crossval.split_off(result)
    result["seconds"] = time.perf_counter() - started
    if out is not None:
        from bench.report import write_report

        write_report(result, out)
    return result


def results_dict(
    runs: Sequence[ConversationRun],
    settings: Settings,
    embedder: Embedder,
    *,
    ks: Sequence[int],
    budgets: Sequence[int],
    budget: int,
) -> dict[str, Any]:
    conversations: dict[str, Any] = {}
    evidence_total = EvidenceReport()
    fallbacks: Counter = Counter()
    for run in runs:
        evidence_total.add(run.evidence)
        fallbacks.update(run.fallbacks)
        conversations[run.sample_id] = {
            "evidence": vars(run.evidence),
            "ingest": run.ingest,
            "methods": {
                name: summarise(answers, ks, budget)
                for name, answers in by_method(run.answers).items()
            },
        }
    all_answers = [answer for run in runs for answer in run.answers]
    ingests = [run.ingest for run in runs]
    messages = sum(i["messages"] for i in ingests)
    calls = sum(i["llm_calls"] for i in ingests)
    prompt_tokens = sum(i["prompt_tokens"] for i in ingests)
    return {
        "budget": budget,
        "budgets": list(budgets),
        "ks": list(ks),
        "conversations": conversations,
        "methods": {
            name: summarise(answers, ks, budget) for name, answers in by_method(all_answers).items()
        },
        "ingest": {
            "conversations": len(runs),
            "messages": messages,
            "topics": sum(i["topics"] for i in ingests),
            "seconds": sum(i["seconds"] for i in ingests),
            "llm_calls": calls,
            "prompt_tokens": prompt_tokens,
            "llm_calls_per_message": calls / messages if messages else 0.0,
            "prompt_tokens_per_message": prompt_tokens / messages if messages else 0.0,
        },
        "evidence": vars(evidence_total),
        "rerank_fallbacks": dict(fallbacks),
        "setup": {
            "embedder": embedder.name,
            "consolidation_similarity_threshold": settings.consolidation_similarity_threshold,
            "models": {agent: settings.model_for(agent) for agent in AGENTS},
            "categories": {str(k): v for k, v in CATEGORY_NAMES.items()},
        },
    }
