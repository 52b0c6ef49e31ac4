"""Who the memory-only answer says wrote each quote (`nodes.response.offline_answer`):
"You" in the user's own chat with the bot, each author's name where the quotes have
several (an imported chat), so no one else's words read as the user's."""

from __future__ import annotations

from core.state import SelectedTopic
from nodes.response.offline_answer import RecalledTopic, memory_answer
from tests.support.messages import message_row

PICK = SelectedTopic(id=7, reason="vector order", excerpt=None, score=0.5)


def recalled(*quotes: dict) -> list[RecalledTopic]:
    return [RecalledTopic(PICK, "2026-03-02", "Keepsakes", list(quotes), whole=False)]


def row(message_id: int, text: str, author: str | None, role: str = "user") -> dict:
    return message_row(message_id, message_id, text, 60.0 * message_id, role=role, author=author)


def test_an_imported_chats_quotes_name_their_authors() -> None:
    bowl = row(1, "My hand-painted bowl reminds me of art.", "Caroline")
    necklace = row(2, "That necklace is gorgeous!", "Melanie")
    answer = memory_answer("en", recalled(bowl, necklace), [], [], [])
    assert "> Caroline (09:00): My hand-painted bowl" in answer
    assert "> Melanie (09:00): That necklace" in answer
    assert "> You" not in answer
    # Earlier in the conversation too, and in Russian.
    russian = memory_answer("ru", recalled(bowl), [necklace], [], [])
    assert "> Caroline (09:00)" in russian and "> Melanie (2026-03-02 09:00)" in russian


def test_the_users_own_chat_quotes_you_and_topica() -> None:
    asked = row(1, "What should I take to the vet?", "Alexei Ivanov")
    answered = row(2, "The vaccination card and a stool sample.", "Topica", role="assistant")
    unnamed = row(3, "And the carrier.", None)
    for answer in (
        memory_answer("en", recalled(asked, answered, unnamed), [], [], []),
        memory_answer("en", recalled(asked), [answered, unnamed], [], []),
    ):
        assert "> You (09:00): What should I take" in answer
        assert "Alexei" not in answer
        assert "> Topica (" in answer
    russian = memory_answer("ru", recalled(asked, answered), [], [], [])
    assert "> Вы (09:00)" in russian and "> Topica (09:00)" in russian
