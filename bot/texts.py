"""Everything the bot says on its own, in Russian and English.

The language follows the user's Telegram `language_code`: Russian for `ru`
(and the neighbouring `uk`, `be`, `kk`, whose users mostly read Russian),
English otherwise. Strings are Telegram HTML; values put into them are escaped
by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

RUSSIAN_READERS = ("ru", "uk", "be", "kk")


@dataclass(frozen=True)
class Texts:
    language: str
    start: str
    help: str
    new_segment: str
    memory_empty: str
    memory_facts: str
    memory_people: str
    memory_topics: str
    forget_nothing: str
    forget_choose: str
    forget_confirm_fact: str
    forget_confirm_topic: str
    forget_yes: str
    forget_no: str
    forgot: str
    forget_cancelled: str
    forget_gone: str
    export_caption: str
    stats: str
    unsupported_file: str
    file_too_large: str
    download_failed: str
    turn_failed: str
    photo: str
    voice: str
    audio: str
    document: str
    truncated: str

    def commands(self) -> list[tuple[str, str]]:
        """(command, description) pairs for the Telegram command menu."""
        if self.language == "ru":
            return [
                ("new", "Начать новый разговор"),
                ("memory", "Что я помню о вас"),
                ("forget", "Забыть факт или тему"),
                ("export", "Вся память файлом JSON"),
                ("stats", "Статистика"),
                ("help", "Справка"),
            ]
        return [
            ("new", "Start a new conversation"),
            ("memory", "What I remember about you"),
            ("forget", "Forget a fact or a topic"),
            ("export", "All memory as a JSON file"),
            ("stats", "Statistics"),
            ("help", "Help"),
        ]


ENGLISH = Texts(
    language="en",
    start=(
        "Hi! I'm Topica, an assistant that remembers. Write to me as to a friend: "
        "I keep our conversations as topics and recall them when they matter.\n\n"
        "/help lists what I can do."
    ),
    help=(
        "<b>What I can do</b>\n"
        "Send text, voice, photos, PDFs or text files; several quick messages become one "
        "request.\n\n"
        "/new: start a new conversation (memory stays)\n"
        "/memory: facts, people and recent topics I keep\n"
        "/forget: delete a fact or a topic\n"
        "/export: everything I keep about you as a JSON file\n"
        "/stats: how much I remember"
    ),
    new_segment="Started a new conversation. What I remember stays with me.",
    memory_empty="I don't remember anything about you yet.",
    memory_facts="<b>Facts</b>",
    memory_people="<b>People</b>",
    memory_topics="<b>Recent topics</b>",
    forget_nothing="There is nothing to forget yet.",
    forget_choose="What should I forget?",
    forget_confirm_fact="Forget this fact?\n\n<i>{content}</i>",
    forget_confirm_topic="Forget this topic and its messages?\n\n<i>{content}</i>",
    forget_yes="Yes, forget",
    forget_no="Cancel",
    forgot="Forgotten: <i>{content}</i>",
    forget_cancelled="Nothing was forgotten.",
    forget_gone="That is already gone.",
    export_caption="Everything I keep about you.",
    stats=(
        "<b>Memory</b>\n"
        "Messages: {messages} ({unarchived} not yet archived)\n"
        "Topics: {topics}\n"
        "Facts: {facts}\n"
        "People: {people}\n"
        "Conversation: #{segment}"
    ),
    unsupported_file="I can't read {name}: this kind of file isn't supported.",
    file_too_large="{name} is too large: I read files up to {limit_mb} MB.",
    download_failed="I couldn't download {name} from Telegram. Please send it again.",
    turn_failed="Something went wrong while answering. Your message is saved; try again later.",
    photo="[photo]",
    voice="[voice message, {duration} s]",
    audio="[audio: {name}]",
    document="[document: {name}]",
    truncated="[… document truncated at {limit} characters]",
)

RUSSIAN = Texts(
    language="ru",
    start=(
        "Привет! Я Топика, ассистент с памятью. Пишите мне как другу: я сохраняю наши "
        "разговоры по темам и вспоминаю их, когда это нужно.\n\n"
        "/help — что я умею."
    ),
    help=(
        "<b>Что я умею</b>\n"
        "Присылайте текст, голосовые, фото, PDF или текстовые файлы; несколько быстрых "
        "сообщений подряд я читаю как один запрос.\n\n"
        "/new — начать новый разговор (память сохранится)\n"
        "/memory — факты, люди и недавние темы\n"
        "/forget — удалить факт или тему\n"
        "/export — всё, что я о вас храню, файлом JSON\n"
        "/stats — сколько я помню"
    ),
    new_segment="Начали новый разговор. Всё, что я помню, остаётся со мной.",
    memory_empty="Я пока ничего о вас не помню.",
    memory_facts="<b>Факты</b>",
    memory_people="<b>Люди</b>",
    memory_topics="<b>Недавние темы</b>",
    forget_nothing="Пока нечего забывать.",
    forget_choose="Что забыть?",
    forget_confirm_fact="Забыть этот факт?\n\n<i>{content}</i>",
    forget_confirm_topic="Забыть эту тему и её сообщения?\n\n<i>{content}</i>",
    forget_yes="Да, забыть",
    forget_no="Отмена",
    forgot="Забыто: <i>{content}</i>",
    forget_cancelled="Ничего не забыто.",
    forget_gone="Этого уже нет.",
    export_caption="Всё, что я о вас храню.",
    stats=(
        "<b>Память</b>\n"
        "Сообщений: {messages} (ещё не в архиве: {unarchived})\n"
        "Тем: {topics}\n"
        "Фактов: {facts}\n"
        "Людей: {people}\n"
        "Разговор: №{segment}"
    ),
    unsupported_file="Не могу прочитать {name}: такой тип файла не поддерживается.",
    file_too_large="{name} слишком большой: я читаю файлы до {limit_mb} МБ.",
    download_failed="Не удалось скачать {name} из Telegram. Пришлите его ещё раз.",
    turn_failed="Не получилось ответить. Сообщение сохранено — попробуйте чуть позже.",
    photo="[фото]",
    voice="[голосовое сообщение, {duration} с]",
    audio="[аудио: {name}]",
    document="[документ: {name}]",
    truncated="[… документ обрезан на {limit} символах]",
)


def texts_for(language_code: str | None) -> Texts:
    """The user's texts: Russian for Russian readers, English for everyone else."""
    language = (language_code or "").split("-")[0].lower()
    return RUSSIAN if language in RUSSIAN_READERS else ENGLISH
