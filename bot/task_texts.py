"""What the bot says about reminders, tasks and time zones, in English and Russian."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.texts import ENGLISH, RUSSIAN, Texts

EXAMPLES_EN = "/remind in 10 minutes stretch · /remind every Monday at 10 weekly review"
EXAMPLES_RU = "/remind через 10 минут размяться · /remind каждый понедельник в 10 отчёт"
ZONES = "/timezone Europe/Moscow, /timezone London"


@dataclass(frozen=True)
class TaskTexts:
    reminder: str
    late: str
    remind_usage: str
    remind_bad: str
    reminded: str
    repeats: dict[str, str]
    """How a recurring task repeats, by its rule's kind: daily, weekdays, weekly."""
    tasks_empty: str
    tasks_title: str
    task_paused: str
    buttons: dict[str, str]
    """Button labels by action: pause, resume, cancel."""
    changed: dict[str, str]
    task_gone: str
    timezone_set: str
    timezone_current: str
    timezone_bad: str
    offer: str
    """A reminder offered for something the user promised or planned."""
    offer_buttons: dict[str, str]
    """Offer button labels by answer: accept (with the time), dismiss."""
    offer_dismissed: str
    offer_gone: str
    offer_passed: str


def in_both(**texts: tuple[Any, Any]) -> tuple[TaskTexts, TaskTexts]:
    """The English and the Russian texts, from each text's (English, Russian) pair."""
    english, russian = ({name: pair[i] for name, pair in texts.items()} for i in (0, 1))
    return TaskTexts(**english), TaskTexts(**russian)


ENGLISH_TASKS, RUSSIAN_TASKS = in_both(
    reminder=("⏰ {text}", "⏰ {text}"),
    late=(
        "\n<i>(late: I was offline when it was due)</i>",
        "\n<i>(с опозданием: я был недоступен, когда пришло время)</i>",
    ),
    remind_usage=(
        f"Tell me when and what, e.g.: {EXAMPLES_EN}",
        f"Скажите, когда и о чём напомнить, например: {EXAMPLES_RU}",
    ),
    remind_bad=(
        f"I can't read when or what in “{{text}}”. Examples: {EXAMPLES_EN}",
        f"Не могу понять, когда или о чём напомнить: «{{text}}». Примеры: {EXAMPLES_RU}",
    ),
    reminded=(
        "⏰ I'll remind you on {when}{repeats}: <i>{what}</i>",
        "⏰ Напомню {when}{repeats}: <i>{what}</i>",
    ),
    repeats=(
        {"daily": ", then every day", "weekdays": ", then on weekdays", "weekly": ", weekly"},
        {
            "daily": ", затем каждый день",
            "weekdays": ", затем по будням",
            "weekly": ", еженедельно",
        },
    ),
    tasks_empty=(
        "You have no reminders. Set one: /remind in 10 minutes stretch",
        "Напоминаний нет. Поставьте: /remind через 10 минут размяться",
    ),
    tasks_title=(
        "<b>Your reminders</b> (time zone {zone})",
        "<b>Ваши напоминания</b> (часовой пояс {zone})",
    ),
    task_paused=("paused", "на паузе"),
    buttons=(
        {"pause": "⏸ Pause {n}", "resume": "▶ Resume {n}", "cancel": "✖ Cancel {n}"},
        {"pause": "⏸ Пауза {n}", "resume": "▶ Продолжить {n}", "cancel": "✖ Отменить {n}"},
    ),
    changed=(
        {"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"},
        {"pause": "На паузе", "resume": "Продолжено", "cancel": "Отменено"},
    ),
    task_gone=("There is no such reminder any more.", "Такого напоминания больше нет."),
    timezone_set=(
        "Time zone: {zone}. Reminders use it from now on.",
        "Часовой пояс: {zone}. Напоминания теперь идут по нему.",
    ),
    timezone_current=(
        f"Your time zone is {{zone}}. Change it: {ZONES}",
        f"Ваш часовой пояс: {{zone}}. Сменить: {ZONES}",
    ),
    timezone_bad=(
        f"I don't know the time zone “{{name}}”. Examples: {ZONES}",
        f"Не знаю часовой пояс «{{name}}». Примеры: {ZONES}",
    ),
    offer=(
        "📝 You said: “{said}”. Shall I remind you on {when}: <i>{what}</i>?",
        "📝 Вы писали: «{said}». Напомнить {when}: <i>{what}</i>?",
    ),
    offer_buttons=(
        {"accept": "⏰ Remind me {when}", "dismiss": "No thanks"},
        {"accept": "⏰ Напомнить {when}", "dismiss": "Не надо"},
    ),
    offer_dismissed=("📝 No reminder for <i>{what}</i>.", "📝 Не напоминаю: <i>{what}</i>."),
    offer_gone=("This offer is no longer open.", "Это предложение уже неактуально."),
    offer_passed=(
        "That time has already passed; nothing was scheduled.",
        "Это время уже прошло, ничего не запланировано.",
    ),
)


def task_texts(texts: Texts) -> TaskTexts:
    return RUSSIAN_TASKS if texts is RUSSIAN else ENGLISH_TASKS


def texts_for(request: str) -> Texts:
    """The bot's texts for a run's message or an offer, which has no user update to take a
    language from: Russian for a request written in Cyrillic."""
    cyrillic = any("а" <= char.lower() <= "я" or char.lower() == "ё" for char in request)
    return RUSSIAN if cyrillic else ENGLISH


def task_texts_for(request: str) -> TaskTexts:
    """The task texts for a run's message or an offer (`texts_for`)."""
    return task_texts(texts_for(request))
