"""The evaluation harness shared by `eval locomo` and `eval beam`: evidence recall of
Topica and the baselines, in one run.

Each conversation is ingested into a fresh data directory (one user, the memory
graph as the CLI runs it), then every answerable question (`Benchmark.answerable`) is
put to every method. Evidence ids that are malformed or not in the conversation are
counted and left out; a question left with no evidence is counted and skipped. A
question memory cannot answer (`Benchmark.abstains`) is put to every method too and
scored as whether the method recalled nothing. LLM calls and prompt tokens are
counted by a callback handler, for ingestion (per stored message) and for retrieval
(per question), so a configured model shows up in the figures and the offline path
shows zeros.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from app.memory import archive_user
from bench import crossval
from bench.baselines import Method, baselines
from bench.benchmark import Benchmark
from bench.corpus import Corpus
from bench.ingests import Ingests, fingerprint, folder_name, kept_in_data_dir
from bench.key_sentence import key_sentence
from bench.locomo import Conversation, Question
from bench.scoring import (
    ConversationRun,
    EvalSetup,
    EvidenceReport,
    recalled_nothing,
    results_dict,
    score,
    usable_evidence,
)
from bench.topica import Topica
from bench.usage import counting_all
from core.callbacks import LLMUsage
from core.deps import Deps
from core.progress import ProgressBoard, progress_board
from core.settings import Settings
from stores.embedders import Embedder, build_embedder
from stores.services import build_deps

DEFAULT_BUDGETS = (250, 500, 1000, 2000, 4000, 8000)
USER_ID = 1


def conversation_deps(settings: Settings, embedder: Embedder, data_dir: Path) -> Deps:
    """The services of one conversation's data directory (on PostgreSQL, its schema,
    named after the directory)."""
    update: dict[str, Any] = {"data_dir": data_dir}
    if settings.database_url is not None:
        update["database_schema"] = "eval_" + re.sub(r"[^a-z0-9]", "_", data_dir.name.lower())
    return build_deps(settings.model_copy(update=update), embedder=embedder)


async def ingest(
    settings: Settings,
    embedder: Embedder,
    conversation: Conversation,
    data_dir: Path,
    progress: ProgressBoard | None = None,
) -> tuple[Corpus, dict[str, Any]]:
    """A fresh data directory (on PostgreSQL, a fresh schema, named after the directory)
    with the conversation stored and archived for one user."""
    deps = conversation_deps(settings, embedder, data_dir)
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


@asynccontextmanager
async def stored(
    conversation: Conversation, setup: EvalSetup, progress: ProgressBoard
) -> AsyncIterator[tuple[Corpus, dict[str, Any]]]:
    """The conversation stored for one user, and its ingest report: in a fresh temporary
    data directory, removed after; or in `setup.ingests`, reused when it was stored the
    same way (`bench.ingests`) and kept."""
    ingests = setup.ingests
    if ingests is None:
        prefix = f"topica-eval-{folder_name(conversation)}-"
        data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    else:
        data_dir = ingests.place(conversation)
    try:
        corpus, report = await load_or_ingest(conversation, setup, data_dir, progress)
        try:
            yield corpus, report
        finally:
            drop = getattr(corpus.deps.store.db, "drop_schema", None)
            if drop is not None:  # PostgreSQL: the conversation's schema goes too
                drop()
            corpus.deps.close()
            if ingests is not None:  # a later run of this process may store it afresh
                corpus.deps.vectors.release()
    finally:
        if ingests is None:
            shutil.rmtree(data_dir, ignore_errors=True)


async def load_or_ingest(
    conversation: Conversation, setup: EvalSetup, data_dir: Path, progress: ProgressBoard
) -> tuple[Corpus, dict[str, Any]]:
    """`ingest` into `data_dir`; with `setup.ingests`, the conversation stored there
    before when it was made the same way (its report with `reused`), else stored afresh."""
    settings, embedder, ingests = setup.settings, setup.embedder, setup.ingests
    if ingests is None:
        return await ingest(settings, embedder, conversation, data_dir, progress)
    key = fingerprint(settings, embedder.name, conversation)
    report = await asyncio.to_thread(ingests.stored, data_dir, key)
    if report is not None:
        deps = conversation_deps(settings, embedder, data_dir)
        return await Corpus.load(deps, USER_ID, conversation), {**report, "reused": True}
    corpus, report = await ingest(settings, embedder, conversation, data_dir, progress)
    await asyncio.to_thread(ingests.keep, data_dir, key, report)
    return corpus, {**report, "reused": False}


async def evaluate_conversation(
    conversation: Conversation,
    methods: Sequence[Method],
    setup: EvalSetup,
    progress: ProgressBoard,
) -> ConversationRun:
    async with stored(conversation, setup, progress) as (corpus, ingest_report):
        for method in methods:
            await method.prepare(corpus)
        unit_maps = {method.name: dict(method.unit_of(corpus)) for method in methods}
        known = set(corpus.order)
        evidence_report = EvidenceReport()
        questions = [
            q
            for q in conversation.questions
            if setup.benchmark.answerable(q) or setup.benchmark.abstains(q)
        ]
        run = ConversationRun(conversation.sample_id, evidence_report, ingest_report)
        asking = progress.task(
            f"{conversation.sample_id}: questions", total=len(questions), unit="questions"
        )
        for question in questions:
            if setup.benchmark.abstains(question):
                await abstain(run, corpus, question, methods)
                asking.advance()
                continue
            evidence = usable_evidence(question, known, evidence_report)
            if evidence:
                await answer_question(run, corpus, question, evidence, methods, unit_maps, setup)
            asking.advance()
        asking.finish(remove=True)
        return run


async def answer_question(
    run: ConversationRun,
    corpus: Corpus,
    question: Question,
    evidence: list[str],
    methods: Sequence[Method],
    unit_maps: dict[str, dict[str, str]],
    setup: EvalSetup,
) -> None:
    # The question is encoded once up front and its time added to every method that
    # embeds, so no method profits from another's cached query vector.
    started = time.perf_counter()
    await asyncio.to_thread(corpus.deps.embedder.encode_query, question.question)
    embed_ms = (time.perf_counter() - started) * 1000
    keys = {
        i: key_sentence(corpus.rows[i]["content"], question.question, str(question.answer))
        for i in evidence
    }
    for method in methods:
        started = time.perf_counter()
        retrieval = await method.retrieve(corpus, question.question)
        latency_ms = (time.perf_counter() - started) * 1000 - retrieval.untimed_ms
        if method.uses_embedder:
            latency_ms += embed_ms
        fallback = retrieval.info.get("rerank_fallback")
        if fallback and not method.name.startswith(crossval.PREFIX):
            run.fallbacks[fallback] += 1
        answer = score(
            method,
            corpus,
            retrieval,
            evidence,
            question.category,
            ks=setup.ks,
            budgets=setup.budgets,
            budget=setup.budget,
            unit_of=unit_maps[method.name],
            latency_ms=latency_ms,
            keys=keys,
        )
        run.answers.append(replace(answer, question=question.question))


async def abstain(
    run: ConversationRun, corpus: Corpus, question: Question, methods: Sequence[Method]
) -> None:
    """A question memory cannot answer: whether each method recalled nothing for it."""
    for method in methods:
        retrieval = await method.retrieve(corpus, question.question)
        run.abstentions.append((method.name, recalled_nothing(retrieval)))


def default_methods() -> list[Method]:
    return [Topica(quotes=True), Topica("topica_topics", excerpts=False), *baselines()]


async def evaluate(
    benchmark: Benchmark,
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
    ingests: Path | None = None,
) -> dict[str, Any]:
    """Evaluate every method on the `benchmark` conversations of `data` (all, or those listed).

    `ks` always includes 5 and 10; `budgets` (plus `budget`) are the points of the
    recall-against-budget curve. `methods` makes a fresh list of methods for each
    conversation (default: Topica, Topica with whole topics, and the baselines).
    Progress goes to `console` (stderr by default; `Console(quiet=True)` for none).
    With `out`, writes report.md, results.json and the plots there. Returns the
    results dict (`budget`, `conversations`, `methods`, `ingest`, `evidence`, ...).
    `cross_validate` adds the leave-one-conversation-out view of Topica's tuned weights
    (`bench.crossval`) as `cross_validation`. `ingests` is a folder to keep each stored
    conversation in and reuse it from (`bench.ingests`).
    Raises ValueError for conversations not in the file, and for `ingests` that
    another run holds or the settings' stores cannot be kept in (`kept_in_data_dir`).
    """
    selected = benchmark.load(data, set(conversations) if conversations else None)
    if conversations:
        missing = sorted(set(conversations) - {c.sample_id for c in selected})
        if missing:
            raise ValueError(f"no such conversations in {data}: {', '.join(missing)}")
    if not selected:
        raise ValueError(f"no conversations in {data}")
    budgets = sorted({*budgets, budget})
    ks = sorted(set(ks) | {5, 10})
    if ingests is not None and (why := kept_in_data_dir(settings)):
        raise ValueError(why)
    kept = Ingests(ingests) if ingests is not None else None
    setup = EvalSetup(settings, build_embedder(settings), benchmark, ks, budgets, budget, kept)
    console = console or Console(stderr=True)
    runs: list[ConversationRun] = []
    started = time.perf_counter()
    with kept.held() if kept is not None else nullcontext(), progress_board(console) as progress:
        overall = progress.task("conversations", total=len(selected), unit="conversations")
        for conversation in selected:
            overall.update(description=f"conversations: {conversation.sample_id}")
            instances = methods() + (crossval.variants() if cross_validate else [])
            runs.append(await evaluate_conversation(conversation, instances, setup, progress))
            overall.advance()
    result = results_dict(runs, setup)
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
