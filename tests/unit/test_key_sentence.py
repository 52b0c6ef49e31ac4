"""The key-sentence view of recall at a budget (`bench.key_sentence`)."""

from __future__ import annotations

from bench.key_sentence import key_sentence, recall_key, sentences
from bench.metrics import Packed

PASTE = (
    "I'm adding a notes column to the transactions table.\n"
    "    ALTER TABLE transactions ADD COLUMN notes TEXT;\n"
    "Then the export broke!   The CSV writer drops the new column. Any idea why?"
)


def packed(ids: set[str], excerpts: dict[str, str] | None = None) -> Packed:
    return Packed(message_ids=frozenset(ids), tokens=10, units=1, excerpts=excerpts or {})


def test_sentences_are_cut_at_their_ends_and_at_line_breaks_with_whitespace_collapsed() -> None:
    assert sentences(PASTE) == [
        "I'm adding a notes column to the transactions table.",
        "ALTER TABLE transactions ADD COLUMN notes TEXT;",
        "Then the export broke!",
        "The CSV writer drops the new column.",
        "Any idea why?",
    ]


def test_the_key_sentence_shares_the_most_words_with_the_question_and_its_answer() -> None:
    question = "What broke after I added the notes column?"
    assert key_sentence(PASTE, question, "The CSV export dropped the new column") == (
        "The CSV writer drops the new column."
    )
    # Without the answer the question's words decide; the first sentence wins a tie.
    assert key_sentence(PASTE, question, "") == (
        "I'm adding a notes column to the transactions table."
    )


def test_the_key_sentence_of_a_russian_message_matches_by_stems() -> None:
    text = "Вчера ходили в парк. Кошку Мурку отвезли к ветеринару, у неё аллергия."
    assert key_sentence(text, "Что сказал ветеринар про кошку?", "аллергия") == (
        "Кошку Мурку отвезли к ветеринару, у неё аллергия."
    )


def test_the_key_sentence_reads_as_a_context_shows_it() -> None:
    # A line that looks like a transcript label loses its brackets in every context.
    text = "Notes from the call.\n[Assistant (2026-03-01 10:00)]: the deadline moved to May."
    key = key_sentence(text, "When is the deadline?", "May")
    assert key is not None and "deadline moved to May" in key and not key.startswith("[")


def test_no_shared_word_means_no_key_sentence() -> None:
    assert key_sentence(PASTE, "How do I boil an egg?", "ten minutes") is None


def test_a_message_shown_in_part_counts_only_when_its_key_sentence_is_shown() -> None:
    keys = {"m1": "The CSV writer drops the new column.", "m2": None}
    units = {"m1": "topic:1", "m2": "topic:1"}
    holds = "[user] … The CSV writer drops the new column. Any idea why?"
    lacks = "[user] I'm adding a notes column to the transactions table. …"
    assert recall_key(packed({"m1"}, {"topic:1": holds}), ["m1"], keys, units) == 1.0
    assert recall_key(packed({"m1"}, {"topic:1": lacks}), ["m1"], keys, units) == 0.0
    # Its topic shown whole: the message is whole too.
    assert recall_key(packed({"m1"}), ["m1"], keys, units) == 1.0
    # No key sentence: shown is enough; not shown is never enough.
    assert recall_key(packed({"m1", "m2"}, {"topic:1": holds}), ["m1", "m2"], keys, units) == 1.0
    assert recall_key(packed({"m2"}, {"topic:1": lacks}), ["m1", "m2"], keys, units) == 0.0
