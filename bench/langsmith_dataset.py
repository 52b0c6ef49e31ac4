"""LoCoMo questions as a LangSmith dataset, so retrieval can be evaluated and compared
as experiments in LangSmith (`topica eval locomo-dataset`).

One example per answerable question (categories 1-4): the question and its conversation
as inputs, the evidence dia_ids and the reference answer as outputs, the conversation as
the example's split (so a leave-one-conversation-out view is a split filter there).
Uploading is idempotent: an example is keyed by conversation and question index in its
metadata, and examples already in the dataset are not uploaded again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langsmith import Client
from langsmith.utils import LangSmithNotFoundError

from bench.eval_locomo import ANSWERABLE, CATEGORY_NAMES
from bench.locomo import Conversation

DESCRIPTION = (
    "LoCoMo evidence recall: each question with the dia_ids of the turns that answer it "
    "(uploaded by `topica eval locomo-dataset`)."
)


@dataclass(frozen=True)
class Upload:
    dataset: str
    dataset_id: str
    created: int
    already_there: int


def example_key(sample_id: str, index: int) -> str:
    return f"{sample_id}#{index}"


def locomo_examples(conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
    """The dataset's examples: answerable questions that have usable evidence."""
    examples = []
    for conversation in conversations:
        for index, question in enumerate(conversation.questions):
            if question.category not in ANSWERABLE or not question.evidence:
                continue
            examples.append(
                {
                    "inputs": {
                        "question": question.question,
                        "conversation": conversation.sample_id,
                    },
                    "reference_outputs": {"evidence": question.evidence, "answer": question.answer},
                    "metadata": {
                        "key": example_key(conversation.sample_id, index),
                        "category": CATEGORY_NAMES[question.category],
                    },
                    "split": conversation.sample_id,
                }
            )
    return examples


def upload_dataset(client: Client, name: str, conversations: Sequence[Conversation]) -> Upload:
    """Create dataset `name` if it does not exist and add the examples it lacks."""
    try:
        dataset = client.read_dataset(dataset_name=name)
    except LangSmithNotFoundError:
        dataset = client.create_dataset(name, description=DESCRIPTION)
    present = {
        (example.metadata or {}).get("key")
        for example in client.list_examples(dataset_id=dataset.id)
    }
    examples = locomo_examples(conversations)
    new = [example for example in examples if example["metadata"]["key"] not in present]
    if new:
        client.create_examples(dataset_id=dataset.id, examples=new)
    return Upload(name, str(dataset.id), len(new), len(examples) - len(new))
