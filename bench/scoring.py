"""The evaluation's scores: one method's answer to one question, and their summaries.

`score` reduces a method's retrieval for one question to its metrics (recall at k
units, NDCG, recall at each budget and its key-sentence view, tokens, latency, whether
it recalled nothing);
`summarise` averages them over questions (micro-average); `results_dict` gathers a
run's conversations into the figures `eval locomo` and `eval beam` report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench import crossval
from bench.baselines import Method, Retrieval
from bench.benchmark import Benchmark
from bench.corpus import Corpus
from bench.ingests import Ingests
from bench.key_sentence import recall_key
from bench.locomo import Question
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
from core.settings import AGENTS, Settings
from stores.embedders import Embedder

NDCG_K = 10


@dataclass
class Answer:
    """One method's answer to one question, reduced to what the metrics need."""

    method: str
    category: int | str
    recall_all_at_k: dict[int, float]
    recall_any_at_k: dict[int, float]
    ndcg: float | None
    recall_all_by_budget: dict[int, float]
    recall_any_by_budget: dict[int, float]
    recall_key_by_budget: dict[int, float]
    """recall_all in the key-sentence view (`bench.key_sentence`)."""
    fraction_by_budget: dict[int, float]
    tokens_at_budget: int
    selected_tokens: int
    latency_ms: float
    llm_calls: int
    prompt_tokens: int
    recall_all_quoted: float | None = None
    """Every evidence turn among the quotes of the method's answer without a model."""
    recalled_nothing: bool = False
    """The method's context holds no message at all (it says memory holds nothing)."""
    question: str = ""
    """The question's text (`question_records`)."""
    evidence_places: dict[str, int | None] = field(default_factory=dict)
    """Each evidence message's place in the order the method fills a context in (0: the
    first), None where the method never offers it (`evidence_places`)."""


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
    abstentions: list[tuple[str, bool]] = field(default_factory=list)
    """(method, recalled nothing) for each question that memory cannot answer."""


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
    category: int | str,
    *,
    ks: Sequence[int],
    budgets: Sequence[int],
    budget: int,
    unit_of: dict[str, str],
    latency_ms: float,
    keys: Mapping[str, str | None],
) -> Answer:
    units = retrieval.units
    by_key = {unit.key: unit for unit in units}
    fill = retrieval.fill if retrieval.fill is not None else whole_units(units)
    wanted = sorted({*budgets, budget})
    packs = (
        retrieval.fit(wanted)
        if retrieval.fit is not None
        else {b: pack(fill, by_key, corpus.lines, b) for b in wanted}
    )
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
        recall_key_by_budget={b: recall_key(p, evidence, keys, unit_of) for b, p in packs.items()},
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
        recalled_nothing=recalled_nothing(retrieval),
        evidence_places=evidence_places(fill, evidence),
    )


def evidence_places(
    fill: Sequence[tuple[str, str]], evidence: Sequence[str]
) -> dict[str, int | None]:
    """Where each of `evidence` first stands among `fill`'s messages ((unit key, message
    id) in the order a context takes them), None where it never does: how far a miss is
    from the room a budget has."""
    first: dict[str, int] = {}
    for _, message_id in fill:
        first.setdefault(message_id, len(first))
    return {message_id: first.get(message_id) for message_id in evidence}


def recalled_nothing(retrieval: Retrieval) -> bool:
    """The retrieval offers no message to the context (no fill, or no unit when it has none)."""
    fill = retrieval.fill if retrieval.fill is not None else whole_units(retrieval.units)
    return not fill


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
            "turned_away": mean([float(a.recalled_nothing) for a in answers]),
            "prompt_tokens_per_question": mean([a.prompt_tokens for a in answers]),
            "recall_all_by_budget": {
                str(b): mean([a.recall_all_by_budget[b] for a in answers]) for b in budgets
            },
            "recall_key_by_budget": {
                str(b): mean([a.recall_key_by_budget[b] for a in answers]) for b in budgets
            },
            "recall_all_quoted": (
                mean([a.recall_all_quoted for a in answers])
                if answers[0].recall_all_quoted is not None
                else None
            ),
            "questions_by_category": dict(
                sorted(Counter(str(a.category) for a in answers).items())
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


@dataclass(frozen=True)
class EvalSetup:
    """What one evaluation runs with: the settings and embedder every conversation is
    stored with, the benchmark, the k of recall@k, the budgets of the recall curve and
    the budget the report leads with; `ingests`, a folder of stored conversations to
    reuse (`bench.ingests`; None: each is stored afresh in a temporary directory)."""

    settings: Settings
    embedder: Embedder
    benchmark: Benchmark
    ks: Sequence[int]
    budgets: Sequence[int]
    budget: int
    ingests: Ingests | None = None


def results_dict(runs: Sequence[ConversationRun], setup: EvalSetup) -> dict[str, Any]:
    """The run's figures: overall and per conversation, by method (see `summarise`), with
    each method's abstention (`abstention_of`) where the benchmark has such questions."""
    settings, embedder, benchmark = setup.settings, setup.embedder, setup.benchmark
    ks, budgets, budget = setup.ks, setup.budgets, setup.budget
    conversations: dict[str, Any] = {}
    evidence_total = EvidenceReport()
    fallbacks: Counter = Counter()
    for run in runs:
        evidence_total.add(run.evidence)
        fallbacks.update(run.fallbacks)
        conversations[run.sample_id] = {
            "evidence": vars(run.evidence),
            "ingest": run.ingest,
            "methods": with_abstention(
                {
                    name: summarise(answers, ks, budget)
                    for name, answers in by_method(run.answers).items()
                },
                run.abstentions,
            ),
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
        "methods": with_abstention(
            {
                name: summarise(answers, ks, budget)
                for name, answers in by_method(all_answers).items()
            },
            [pair for run in runs for pair in run.abstentions],
        ),
        "ingest": {
            "conversations": len(runs),
            "messages": messages,
            "topics": sum(i["topics"] for i in ingests),
            "seconds": sum(i["seconds"] for i in ingests),
            "reused": sum(1 for i in ingests if i.get("reused")),
            "llm_calls": calls,
            "prompt_tokens": prompt_tokens,
            "llm_calls_per_message": calls / messages if messages else 0.0,
            "prompt_tokens_per_message": prompt_tokens / messages if messages else 0.0,
        },
        "evidence": vars(evidence_total),
        "questions": question_records(runs),
        "rerank_fallbacks": dict(fallbacks),
        "benchmark": benchmark.name,
        "setup": {
            "embedder": embedder.name,
            "consolidation_similarity_threshold": settings.consolidation_similarity_threshold,
            "models": {agent: settings.model_for(agent) for agent in AGENTS},
            "categories": dict(benchmark.categories),
            "grouping": benchmark.grouping,
        },
    }


def question_records(runs: Sequence[ConversationRun]) -> list[dict[str, Any]]:
    """Each answered question with its recall_all by method and budget, plain and in the
    key-sentence view, in the run's order (what `bench.diff` compares two runs by); the
    cross-validation variants are left out."""
    records: list[dict[str, Any]] = []
    for run in runs:
        current: dict[str, Any] | None = None
        for answer in run.answers:
            if answer.method.startswith(crossval.PREFIX):
                continue
            if (
                current is None
                or current["question"] != answer.question
                or answer.method in current["recall_all"]
            ):
                current = {
                    "conversation": run.sample_id,
                    "question": answer.question,
                    "category": answer.category,
                    "recall_all": {},
                    "recall_key": {},
                    "evidence_places": {},
                }
                records.append(current)
            current["evidence_places"][answer.method] = answer.evidence_places
            for name, values in (
                ("recall_all", answer.recall_all_by_budget),
                ("recall_key", answer.recall_key_by_budget),
            ):
                current[name][answer.method] = {str(b): value for b, value in values.items()}
    return records


def with_abstention(
    methods: dict[str, dict[str, Any]], abstentions: Sequence[tuple[str, bool]]
) -> dict[str, dict[str, Any]]:
    """Adds `abstention` to each method: over the questions memory cannot answer, how many
    there were and the share for which the method recalled nothing (None without any)."""
    for name, metrics in methods.items():
        mine = [float(nothing) for method, nothing in abstentions if method == name]
        metrics["abstention"] = {"questions": len(mine), "recalled_nothing": mean(mine)}
    return methods
