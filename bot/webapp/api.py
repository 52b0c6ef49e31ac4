"""The Mini App's HTTP side: its page and static files, and a JSON API over the
application services (`app.browsing` to read, `app.editing` and `app.forgetting` to
write, `app.tasks` for scheduled tasks), mounted under `/webapp` on an aiohttp application.

Every API request carries `Authorization: tma <initData>`; anything but a valid,
fresh signature of an allowed user gets a bare 401. The user id comes from the signed
data only, and every read and write is scoped to it: another user's id is simply not
found (404). Request bodies are bounded; every response carries the security headers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, get_args

from aiohttp import web

from app import browsing, editing
from app.forgetting import forget
from app.tasks import (
    NoSuchTask,
    TaskAction,
    TaskError,
    change_task,
    list_tasks,
    task_view,
    user_timezone,
)
from app.views import export_user
from bot.webapp.auth import WebAppUser, validate_init_data
from core.deps import Deps
from core.errors import StoreError

STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/webapp"
MAX_BODY_BYTES = 16 * 1024
MAX_TEXT_CHARS = 2000
DEPS = web.AppKey("webapp_deps", Deps)
USER = web.RequestKey("webapp_user", WebAppUser)
FRAME_ANCESTORS = "https://web.telegram.org https://*.telegram.org"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"object-src 'none'; base-uri 'none'; frame-ancestors {FRAME_ANCESTORS}"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class BadInput(Exception):
    """A request the API cannot act on; its message is the one-line error returned."""


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Security headers on everything under the prefix; the API behind Telegram's auth."""
    if not request.path.startswith(PREFIX):
        return await handler(request)
    try:
        if request.path.startswith(PREFIX + "/api/"):
            user = authenticate(request)
            if user is None:
                raise web.HTTPUnauthorized()
            request[USER] = user
        response = await handler(request)
    except (StoreError, NoSuchTask):
        response = web.json_response({"error": "not found"}, status=404)
    except BadInput as error:
        response = web.json_response({"error": str(error)}, status=400)
    except TaskError as error:
        response = web.json_response({"error": str(error)}, status=409)
    except web.HTTPException as error:
        response = web.Response(status=error.status, headers=error.headers)
    response.headers.update(SECURITY_HEADERS)
    return response


def authenticate(request: web.Request) -> WebAppUser | None:
    deps = request.app[DEPS]
    header = request.headers.get("Authorization", "")
    token = deps.settings.telegram_token
    if not header.startswith("tma ") or token is None:
        return None
    user = validate_init_data(header[4:], token.get_secret_value(), deps.settings.webapp_max_age_s)
    if user is None or user.id not in deps.settings.allowed_user_ids:
        return None
    return user


async def body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object, at most `MAX_BODY_BYTES`."""
    raw = await request.content.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY_BYTES, actual_size=len(raw))
    try:
        data = json.loads(raw or b"{}")
    except ValueError as error:
        raise BadInput("the body is not JSON") from error
    if not isinstance(data, dict):
        raise BadInput("the body must be a JSON object")
    return data


def text_field(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT_CHARS:
        raise BadInput(f"'{name}' must be text of 1 to {MAX_TEXT_CHARS} characters")
    return value.strip()


def item_id(request: web.Request, name: str = "id") -> int:
    try:
        return int(request.match_info[name])
    except ValueError as error:
        raise BadInput(f"'{name}' must be a number") from error


async def run(request: web.Request, function: Callable[..., Any], *args: Any) -> web.Response:
    """`function(deps, user_id, *args)` off the event loop, its result as JSON."""
    deps = request.app[DEPS]
    result = await asyncio.to_thread(partial(function, deps, request[USER].id, *args))
    return web.json_response(result, dumps=partial(json.dumps, ensure_ascii=False, default=str))


async def me(request: web.Request) -> web.Response:
    return web.json_response({"language": request[USER].language})


async def topics(request: web.Request) -> web.Response:
    query = request.query
    return await run(
        request,
        browsing.timeline,
        query.get("q", "")[:MAX_TEXT_CHARS],
        query.get("since", ""),
        query.get("until", ""),
    )


async def topic(request: web.Request) -> web.Response:
    return await run(request, browsing.topic_detail, item_id(request))


async def facts(request: web.Request) -> web.Response:
    return await run(request, browsing.facts_by_type)


async def edit_fact(request: web.Request) -> web.Response:
    content = text_field(await body(request), "content")
    return await run(request, editing.edit_fact, item_id(request), content)


async def people(request: web.Request) -> web.Response:
    return await run(request, browsing.people_view)


async def rename_person(request: web.Request) -> web.Response:
    name = text_field(await body(request), "name")
    return await run(request, editing.rename_person, item_id(request), name)


async def merge_person(request: web.Request) -> web.Response:
    data = await body(request)
    if not isinstance(data.get("into"), int):
        raise BadInput("'into' must be a person's id")
    return await run(request, editing.merge_people, item_id(request), data["into"])


def forgetting(kind: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return await run(request, forget, kind, item_id(request))

    return handler


async def forget_all(request: web.Request) -> web.Response:
    data = await body(request)
    if data.get("confirm") is not True:
        raise BadInput("'confirm' must be true")
    return await run(request, editing.forget_everything)


async def answers(request: web.Request) -> web.Response:
    return await run(request, browsing.recent_answers)


async def tasks(request: web.Request) -> web.Response:
    return await run(request, list_tasks)


TASK_ACTIONS: tuple[str, ...] = get_args(TaskAction)


def changed_task(deps: Deps, user_id: int, task_id: int, action: TaskAction) -> dict[str, Any]:
    """Pause, resume or cancel the user's task; the task as the Tasks view shows it."""
    return task_view(change_task(deps, user_id, task_id, action), user_timezone(deps, user_id))


async def change(request: web.Request) -> web.Response:
    action = request.match_info["action"]
    if action not in TASK_ACTIONS:
        raise BadInput(f"the action must be one of {', '.join(TASK_ACTIONS)}")
    return await run(request, changed_task, item_id(request), action)


async def export(request: web.Request) -> web.Response:
    response = await run(request, export_user)
    response.headers["Content-Disposition"] = 'attachment; filename="topica-export.json"'
    return response


async def to_page(request: web.Request) -> web.Response:
    raise web.HTTPFound(PREFIX + "/")


async def page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


def api_routes() -> list[tuple[str, str, Handler]]:
    return [
        ("GET", "/me", me),
        ("GET", "/topics", topics),
        ("GET", "/topics/{id}", topic),
        ("DELETE", "/topics/{id}", forgetting("topic")),
        ("GET", "/facts", facts),
        ("PATCH", "/facts/{id}", edit_fact),
        ("DELETE", "/facts/{id}", forgetting("fact")),
        ("GET", "/people", people),
        ("PATCH", "/people/{id}", rename_person),
        ("POST", "/people/{id}/merge", merge_person),
        ("DELETE", "/people/{id}", forgetting("person")),
        ("POST", "/forget-all", forget_all),
        ("GET", "/answers", answers),
        ("GET", "/tasks", tasks),
        ("POST", "/tasks/{id}/{action}", change),
        ("GET", "/export", export),
    ]


def add_webapp(app: web.Application, deps: Deps) -> None:
    """Serve the Mini App on `app` under `/webapp` (page, static files, API)."""
    app[DEPS] = deps
    app.middlewares.append(guard)
    app.router.add_get(PREFIX, to_page)
    app.router.add_get(PREFIX + "/", page)
    app.router.add_static(PREFIX + "/static/", STATIC)
    for method, path, handler in api_routes():
        app.router.add_route(method, PREFIX + "/api" + path, handler)


def webapp_application(deps: Deps) -> web.Application:
    """A standalone application serving only the Mini App (polling mode)."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    add_webapp(app, deps)
    return app


async def serve_webapp(deps: Deps, host: str, port: int) -> web.AppRunner:
    """Start the Mini App's own listener (polling mode); the caller cleans up the runner."""
    runner = web.AppRunner(webapp_application(deps))
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
