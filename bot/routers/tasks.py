"""Reminders and tasks: /remind <when> <what>, /tasks (pause, resume and cancel buttons),
/timezone <zone or city>, and the answers to reminder offers (`bot.offers`).

Like every command these are control, never stored as messages. A task id in button
data is looked up with the pressing user's id (`app.tasks`), so a button, pressed or
forged, can never reach another user's task; an offer's likewise (`app.offers`).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from aiogram import Router
from aiogram.enums import ParseMode
from aiogram.filters import Command, CommandObject
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, InlineKeyboardMarkup, Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from app.offers import OfferError, OfferPassed, accept_offer, dismiss_offer
from app.tasks import (
    TaskError,
    add_from_text,
    change_task,
    list_tasks,
    repeats,
    set_user_timezone,
    task_view,
    user_timezone,
)
from bot.offers import OfferAnswer
from bot.render import escape, shorten
from bot.task_texts import TaskTexts, task_texts
from bot.texts import Texts
from core.deps import Deps
from core.when import WhenError

LINE_CHARS = 120
LISTED = 20

Action = Literal["pause", "resume", "cancel"]


class TaskAction(CallbackData, prefix="task"):
    action: Action
    task_id: int


def confirmation(words: TaskTexts, task: dict) -> str:
    """A new task's confirmation: its first time in the task's zone, how it repeats."""
    view = task_view(task, task["timezone"])
    kind = repeats(task["rule"])
    return words.reminded.format(
        when=view["next_run_local"],
        repeats=words.repeats[kind] if kind else "",
        what=escape(task["request"]),
    )


async def remind(message: Message, command: CommandObject, deps: Deps, texts: Texts) -> None:
    words = task_texts(texts)
    text = (command.args or "").strip()
    if not text:
        await message.answer(words.remind_usage)
        return
    try:
        task = await asyncio.to_thread(add_from_text, deps, message.from_user.id, text)
    except WhenError:
        await message.answer(words.remind_bad.format(text=shorten(text, LINE_CHARS)))
        return
    await message.answer(confirmation(words, task), parse_mode=ParseMode.HTML)


def tasks_menu(deps: Deps, user_id: int, words: TaskTexts) -> tuple[str, InlineKeyboardMarkup]:
    """The /tasks list (open tasks, next run in the user's zone) and a row of buttons per task."""
    tasks = list_tasks(deps, user_id, open_only=True)[:LISTED]
    keyboard = InlineKeyboardBuilder()
    if not tasks:
        return words.tasks_empty, keyboard.as_markup()
    lines = [words.tasks_title.format(zone=escape(user_timezone(deps, user_id)))]
    for number, task in enumerate(tasks, start=1):
        paused = task["state"] == "paused"
        when = words.task_paused if paused else task["next_run_local"]
        kind = repeats(task["rule"])
        repeat = words.repeats[kind].lstrip(", ") if kind else ""
        details = ", ".join(part for part in (when, repeat) if part)
        lines.append(f"{number}. {escape(shorten(task['request'], LINE_CHARS))} ({details})")
        for action in ("resume" if paused else "pause", "cancel"):
            keyboard.button(
                text=words.buttons[action].format(n=number),
                callback_data=TaskAction(action=action, task_id=task["id"]),
            )
    keyboard.adjust(2)
    return "\n".join(lines), keyboard.as_markup()


async def show_tasks(message: Message, deps: Deps, texts: Texts) -> None:
    text, keyboard = await asyncio.to_thread(
        tasks_menu, deps, message.from_user.id, task_texts(texts)
    )
    await message.answer(text, parse_mode=ParseMode.HTML, reply_markup=keyboard)


async def on_task_action(
    query: CallbackQuery, callback_data: TaskAction, deps: Deps, texts: Texts
) -> None:
    words = task_texts(texts)
    user_id = query.from_user.id
    try:
        await asyncio.to_thread(
            change_task, deps, user_id, callback_data.task_id, callback_data.action
        )
    except TaskError:
        await query.answer(words.task_gone, show_alert=True)
        return
    if isinstance(query.message, Message):
        text, keyboard = await asyncio.to_thread(tasks_menu, deps, user_id, words)
        await query.message.edit_text(text, parse_mode=ParseMode.HTML, reply_markup=keyboard)
    await query.answer(words.changed[callback_data.action])


async def on_offer_answer(
    query: CallbackQuery, callback_data: OfferAnswer, deps: Deps, texts: Texts
) -> None:
    """Accept (the reminder is scheduled and confirmed in the offer's place) or dismiss
    a reminder offer; an offer the presser has not open changes nothing."""
    words = task_texts(texts)
    user_id, offer_id = query.from_user.id, callback_data.offer_id
    try:
        if callback_data.answer == "accept":
            task = await asyncio.to_thread(accept_offer, deps, user_id, offer_id)
            text = confirmation(words, task)
        else:
            offer = await asyncio.to_thread(dismiss_offer, deps, user_id, offer_id)
            text = words.offer_dismissed.format(what=escape(offer["request"]))
    except OfferPassed:
        await query.answer(words.offer_passed, show_alert=True)
        return
    except OfferError:
        await query.answer(words.offer_gone, show_alert=True)
        return
    if isinstance(query.message, Message):
        await query.message.edit_text(text, parse_mode=ParseMode.HTML)
    await query.answer()


async def timezone(message: Message, command: CommandObject, deps: Deps, texts: Texts) -> None:
    words = task_texts(texts)
    user_id = message.from_user.id
    name = (command.args or "").strip()
    if not name:
        current = await asyncio.to_thread(user_timezone, deps, user_id)
        await message.answer(words.timezone_current.format(zone=current))
        return
    try:
        chosen = await asyncio.to_thread(set_user_timezone, deps, user_id, name)
    except WhenError:
        await message.answer(words.timezone_bad.format(name=shorten(name, LINE_CHARS)))
        return
    await message.answer(words.timezone_set.format(zone=chosen))


def build_router() -> Router:
    router = Router(name="tasks")
    router.message.register(remind, Command("remind"))
    router.message.register(show_tasks, Command("tasks"))
    router.message.register(timezone, Command("timezone"))
    router.callback_query.register(on_task_action, TaskAction.filter())
    router.callback_query.register(on_offer_answer, OfferAnswer.filter())
    return router
