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
    webapp_button: str
    forget_nothing: str
    forget_choose: str
    forget_confirm_fact: str
    forget_confirm_topic: str
    forget_confirm_topic_facts: str
    forget_confirm_person: str
    forget_page: str
    forget_unknown_kind: str
    help_voice_unread: str
    help_photos_unread: str
    forget_yes: str
    forget_no: str
    forgot: str
    forget_cancelled: str
    forget_gone: str
    export_caption: str
    stats: str
    unsupported_file: str
    file_too_large: str
    document_too_complex: str
    document_encrypted: str
    document_binary: str
    download_failed: str
    turn_failed: str
    photo: str
    voice: str
    audio: str
    document: str
    truncated: str
    stopped_before_writing: str
    answer_cut: str
    private_only: str
    group_refusal: str
    sources_button: str
    sources_title: str
    sources_partial: str
    sources_topics: str
    sources_why: str
    sources_cut: str
    sources_facts: str
    sources_core_fact: str
    sources_people: str
    sources_earlier: str
    sources_you: str
    sources_me: str
    sources_summary: str
    sources_tools: str
    sources_forgotten: str
    sources_nothing: str
    sources_no_answer: str
    sources_gone: str
    fallback_notes: dict[str, str]
    """Per agent: what its fallback meant for the answer (`{reason}`: the reason code)."""

    def commands(self) -> list[tuple[str, str]]:
        """(command, description) pairs for the Telegram command menu."""
        if self.language == "ru":
            return [
                ("new", "Начать новый разговор"),
                ("memory", "Что я помню о вас"),
                ("forget", "Забыть факт, человека или тему"),
                ("export", "Вся память файлом JSON"),
                ("remind", "Напомнить: /remind через 10 минут размяться"),
                ("tasks", "Напоминания: пауза и отмена"),
                ("timezone", "Часовой пояс напоминаний"),
                ("why", "Из чего сложился последний ответ"),
                ("stats", "Статистика"),
                ("help", "Справка"),
            ]
        return [
            ("new", "Start a new conversation"),
            ("memory", "What I remember about you"),
            ("forget", "Forget a fact, a person or a topic"),
            ("export", "All memory as a JSON file"),
            ("remind", "Remind me: /remind in 10 minutes stretch"),
            ("tasks", "Reminders: pause and cancel"),
            ("timezone", "Time zone of reminders"),
            ("why", "What the last answer was made from"),
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
        "/forget: delete a fact, a person or a topic (/forget person: people only)\n"
        "/export: everything I keep about you as a JSON file\n"
        "/remind in 10 minutes stretch, /remind every Monday at 10 review: reminders\n"
        "/tasks: your reminders, to pause or cancel; /timezone Berlin: their time zone\n"
        "/why: what my last answer was made from (also the Sources button under an answer)\n"
        "/stats: how much I remember\n\n"
        "While I write, the answer appears as it grows; the stop button keeps what is "
        "written so far."
    ),
    new_segment="Started a new conversation. What I remember stays with me.",
    memory_empty="I don't remember anything about you yet.",
    memory_facts="<b>Facts</b>",
    memory_people="<b>People</b>",
    memory_topics="<b>Recent topics</b>",
    webapp_button="Open memory",
    forget_nothing="There is nothing to forget yet.",
    forget_choose="What should I forget?",
    forget_confirm_fact="Forget this fact?\n\n<i>{content}</i>",
    forget_confirm_topic="Forget this topic and its messages?\n\n<i>{content}</i>",
    forget_confirm_topic_facts="These facts learnt from it go too:\n{facts}",
    forget_confirm_person="Forget this person?\n\n<i>{content}</i>",
    forget_page="{choose} (page {page} of {pages})",
    forget_unknown_kind="Use /forget, or /forget fact, /forget person, /forget topic.",
    help_voice_unread=(
        "\n\nVoice messages are not transcribed here (no speech-to-text is configured): "
        "I keep them as [voice message] only, so I cannot recall what was said."
    ),
    help_photos_unread=(
        "\n\nPhotos are not described here (no image model is configured): I keep their "
        "captions only."
    ),
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
    document_too_complex="{name} is too complex to read: I stopped reading it.",
    document_encrypted="{name} is encrypted: send it without a password and I'll read it.",
    document_binary="{name} isn't text: I can't read it as a text file.",
    download_failed="I couldn't download {name} from Telegram. Please send it again.",
    turn_failed="Something went wrong while answering. Your message is saved; try again later.",
    photo="[photo]",
    voice="[voice message, {duration} s]",
    audio="[audio: {name}]",
    document="[document: {name}]",
    truncated="[… document truncated at {limit} characters]",
    stopped_before_writing="Stopped before I wrote anything.",
    answer_cut="[… the answer was cut here: I send at most {limit} messages per answer]",
    private_only="I show what I remember only in our private chat.",
    group_refusal=(
        "What I remember about you is private, so I don't answer in groups. "
        "Write to me in a private chat."
    ),
    sources_button="Sources",
    sources_title="<b>What this answer was made from</b>",
    sources_partial="<i>The answer was stopped while I was writing it.</i>",
    sources_topics="<b>Past conversations</b>",
    sources_why="why",
    sources_cut="only its most relevant messages",
    sources_facts="<b>Facts about you</b>",
    sources_core_fact="always in view",
    sources_people="<b>People</b>",
    sources_earlier="<b>Earlier in this conversation</b>",
    sources_you="you",
    sources_me="me",
    sources_summary="A summary of the earlier part of this conversation.",
    sources_tools="<b>Searched memory</b>",
    sources_forgotten="{count} of the sources have been forgotten since.",
    sources_nothing="This answer used nothing from memory.",
    sources_no_answer="There is no answer of mine to explain yet.",
    sources_gone="That answer is no longer in memory.",
    fallback_notes={
        "search": "Only full-text search was used: the vector index was unavailable ({reason}).",
        "enricher": "The search used your words as written ({reason}).",
        "summariser": "The earlier part of the conversation was summarised without the "
        "model ({reason}).",
        "reranker": "Past conversations were taken in search order, without the reranker "
        "({reason}).",
        "responder": "The answer quotes memory; the model did not write it ({reason}).",
    },
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
        "/forget — удалить факт, человека или тему (/forget человек — только людей)\n"
        "/export — всё, что я о вас храню, файлом JSON\n"
        "/remind через 10 минут размяться, /remind каждый понедельник в 10 отчёт — напоминания\n"
        "/tasks — ваши напоминания: пауза, отмена; /timezone Moscow — их часовой пояс\n"
        "/why — из чего сложился мой последний ответ (или кнопка «Источники» под ответом)\n"
        "/stats — сколько я помню\n\n"
        "Ответ появляется по мере того, как я его пишу; кнопка остановки сохраняет уже "
        "написанное."
    ),
    new_segment="Начали новый разговор. Всё, что я помню, остаётся со мной.",
    memory_empty="Я пока ничего о вас не помню.",
    memory_facts="<b>Факты</b>",
    memory_people="<b>Люди</b>",
    memory_topics="<b>Недавние темы</b>",
    webapp_button="Открыть память",
    forget_nothing="Пока нечего забывать.",
    forget_choose="Что забыть?",
    forget_confirm_fact="Забыть этот факт?\n\n<i>{content}</i>",
    forget_confirm_topic="Забыть эту тему и её сообщения?\n\n<i>{content}</i>",
    forget_confirm_topic_facts="Вместе с ней забудутся факты, узнанные из неё:\n{facts}",
    forget_confirm_person="Забыть этого человека?\n\n<i>{content}</i>",
    forget_page="{choose} (страница {page} из {pages})",
    forget_unknown_kind="Напишите /forget, или /forget факт, /forget человек, /forget тема.",
    help_voice_unread=(
        "\n\nГолосовые здесь не расшифровываются (распознавание речи не настроено): я храню "
        "их только как [голосовое сообщение] и не смогу вспомнить, что в них было."
    ),
    help_photos_unread=(
        "\n\nФото здесь не описываются (модель для изображений не настроена): я храню "
        "только подписи к ним."
    ),
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
    document_too_complex="{name} слишком сложен для чтения: я прекратил его читать.",
    document_encrypted="{name} зашифрован: пришлите его без пароля, и я его прочитаю.",
    document_binary="{name} — не текст: я не могу прочитать его как текстовый файл.",
    download_failed="Не удалось скачать {name} из Telegram. Пришлите его ещё раз.",
    turn_failed="Не получилось ответить. Сообщение сохранено — попробуйте чуть позже.",
    photo="[фото]",
    voice="[голосовое сообщение, {duration} с]",
    audio="[аудио: {name}]",
    document="[документ: {name}]",
    truncated="[… документ обрезан на {limit} символах]",
    stopped_before_writing="Остановлено до того, как я что-то написал.",
    answer_cut="[… ответ обрезан здесь: я отправляю не больше {limit} сообщений на ответ]",
    private_only="То, что я помню, я показываю только в нашем личном чате.",
    group_refusal=(
        "То, что я помню о вас, — личное, поэтому в группах я не отвечаю. "
        "Напишите мне в личный чат."
    ),
    sources_button="Источники",
    sources_title="<b>Из чего сложился этот ответ</b>",
    sources_partial="<i>Ответ остановлен, пока я его писал.</i>",
    sources_topics="<b>Прошлые разговоры</b>",
    sources_why="почему",
    sources_cut="только самые нужные сообщения",
    sources_facts="<b>Факты о вас</b>",
    sources_core_fact="всегда перед глазами",
    sources_people="<b>Люди</b>",
    sources_earlier="<b>Ранее в этом разговоре</b>",
    sources_you="вы",
    sources_me="я",
    sources_summary="Краткое содержание начала этого разговора.",
    sources_tools="<b>Поиск по памяти</b>",
    sources_forgotten="Часть источников ({count}) с тех пор забыта.",
    sources_nothing="Этот ответ не опирался на память.",
    sources_no_answer="Пока нет ответа, который можно объяснить.",
    sources_gone="Этого ответа уже нет в памяти.",
    fallback_notes={
        "search": "Искал только полнотекстовым поиском: векторный индекс был недоступен "
        "({reason}).",
        "enricher": "Поиск шёл по вашим словам как есть ({reason}).",
        "summariser": "Начало разговора сжато без модели ({reason}).",
        "reranker": "Прошлые разговоры взяты в порядке поиска, без реранкера ({reason}).",
        "responder": "Ответ цитирует память; модель его не писала ({reason}).",
    },
)


def texts_for(language_code: str | None) -> Texts:
    """The user's texts: Russian for Russian readers, English for everyone else."""
    language = (language_code or "").split("-")[0].lower()
    return RUSSIAN if language in RUSSIAN_READERS else ENGLISH
