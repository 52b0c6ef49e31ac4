"""`topica tasks`: a user's scheduled tasks and reminders: list them (`--json` for
machines), add one (`add --when "<when>" "<what>"`), cancel one (`cancel ID`)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from cli.commands import CommandError, subcommand

if TYPE_CHECKING:
    from core.deps import Deps


def tasks_arguments(parser: argparse.ArgumentParser) -> None:
    """`list` (the default), `add`, `cancel`; each also takes the shared options after it
    (`tasks add --user 5 …`), which then win over those given before it."""
    actions = parser.add_subparsers(dest="action", metavar="{list,add,cancel}")
    listing = actions.add_parser("list", help="the user's tasks (the default)")
    adding = actions.add_parser("add", help='a new task: --when "<when>" "<what>"')
    adding.add_argument("what", nargs="+", help="what to do or remind of")
    adding.add_argument("--when", required=True, help='e.g. "через 10 минут", "every Monday at 10"')
    cancelling = actions.add_parser("cancel", help="cancel one of the user's tasks")
    cancelling.add_argument("task_id", type=int, help="the task id")
    for action in (listing, adding, cancelling):
        action.add_argument("--user", type=int, default=argparse.SUPPRESS, help="user id")
        action.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
        action.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS)


@subcommand("tasks", "user", "json", configure=tasks_arguments)
async def cmd_tasks(args: argparse.Namespace, deps: Deps) -> None:
    """a user's scheduled tasks and reminders: list, add --when "<when>" "<what>", cancel ID"""
    from app.tasks import TaskError, add_task, change_task, list_tasks, task_view, user_timezone
    from cli.output import out, print_json
    from core.records import ID_RANGE
    from core.when import WhenError

    if args.user not in ID_RANGE:
        raise CommandError(f"--user {args.user} is out of range (a 64-bit integer)")
    try:
        if args.action == "add":
            what = " ".join(args.what)
            task = await asyncio.to_thread(add_task, deps, args.user, args.when, what)
        elif args.action == "cancel":
            task = await asyncio.to_thread(change_task, deps, args.user, args.task_id, "cancel")
        else:
            views = await asyncio.to_thread(list_tasks, deps, args.user)
            if args.json:
                print_json(views)
            for view in [] if args.json else views:
                out.print(
                    f"{view['id']}  {view['state']:<9}  {view['next_run_local'] or '—'}  "
                    f"{view['request']}"
                )
            return
    except (WhenError, TaskError) as error:
        raise CommandError(str(error)) from None
    view = task_view(task, user_timezone(deps, args.user))
    if args.json:
        print_json(view)
    else:
        out.print(f"task {view['id']}: {view['state']}, next {view['next_run_local'] or '—'}")
