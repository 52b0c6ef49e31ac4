"""`topica eval locomo`: evidence recall of Topica and the baselines on LoCoMo
(the shared harness, `bench.harness`, with LoCoMo's questions of categories 1-4)."""

from __future__ import annotations

from functools import partial

from bench.benchmark import Benchmark
from bench.harness import USER_ID, default_methods, evaluate, ingest
from bench.locomo import Question, load_conversations

__all__ = [
    "ANSWERABLE",
    "CATEGORY_NAMES",
    "LOCOMO",
    "USER_ID",
    "default_methods",
    "eval_locomo",
    "ingest",
]

ANSWERABLE = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def answerable(question: Question) -> bool:
    return question.category in ANSWERABLE


LOCOMO = Benchmark(
    name="LoCoMo",
    load=load_conversations,
    categories={str(k): v for k, v in CATEGORY_NAMES.items()},
    answerable=answerable,
)


eval_locomo = partial(evaluate, LOCOMO)
"""`bench.harness.evaluate` on the LoCoMo JSON file given as its first argument."""
