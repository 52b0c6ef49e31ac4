"""What the bot says about importing a chat export, in English and Russian."""

from __future__ import annotations

from dataclasses import dataclass

from bot.texts import RUSSIAN, Texts


@dataclass(frozen=True)
class ImportTexts:
    found: str
    button: str
    started: str
    progress: str
    done: str
    too_big: str
    unreadable: str
    expired: str
    failed: str


ENGLISH_IMPORT = ImportTexts(
    found=(
        "This is a {source} export: {chats} chats, {messages} messages from {first} to "
        "{last}, {people} people. Import it into my memory?"
    ),
    button="Import",
    started="Importing {messages} messages…",
    progress="Importing: {stage} {done}/{total}",
    done="Imported: {new} new messages of {messages}, {topics} topics, {people} new people.",
    too_big=(
        "{name} is larger than the 20 MB Telegram lets bots download. Import it from the "
        "command line: topica import telegram PATH --user {user_id} (or import chatgpt)."
    ),
    unreadable="I can't import {name}: {reason}",
    expired="This import is no longer waiting. Send the file again.",
    failed="The import stopped: {reason}. Nothing of it is lost; send the file again to resume.",
)

RUSSIAN_IMPORT = ImportTexts(
    found=(
        "Это экспорт {source}: чатов {chats}, сообщений {messages} с {first} по {last}, "
        "людей {people}. Импортировать в мою память?"
    ),
    button="Импортировать",
    started="Импортирую {messages} сообщений…",
    progress="Импорт: {stage} {done}/{total}",
    done=("Готово: новых сообщений {new} из {messages}, тем {topics}, новых людей {people}."),
    too_big=(
        "{name} больше 20 МБ — столько Telegram не даёт скачать ботам. Импортируйте его из "
        "командной строки: topica import telegram PATH --user {user_id} (или import chatgpt)."
    ),
    unreadable="Не могу импортировать {name}: {reason}",
    expired="Этот импорт больше не ждёт. Пришлите файл ещё раз.",
    failed=(
        "Импорт остановился: {reason}. Ничего не потеряно: пришлите файл снова, чтобы продолжить."
    ),
)


def import_texts(texts: Texts) -> ImportTexts:
    return RUSSIAN_IMPORT if texts is RUSSIAN else ENGLISH_IMPORT
