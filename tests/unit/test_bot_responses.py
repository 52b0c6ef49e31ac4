"""Bot API response models outlive garbage collections (issue 15, load): aiogram builds
`Response[T]` on every call, and pydantic's cache of parametrised models holds them
weakly, so each full collection made the next call build its schema again."""

from __future__ import annotations

import gc
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiogram.methods import TelegramMethod

    from bot.responses import KeepResponseModels

# aiogram's types take seconds to build: they load when a test runs, not at collection, and
# this file's tests all run on one xdist worker (`ONE_WORKER` in tests/conftest.py).


async def through(keep: KeepResponseModels, method: TelegramMethod[Any]) -> None:
    async def make_request(bot: Any, method: TelegramMethod[Any]) -> None:
        return None

    await keep(make_request, None, method)  # type: ignore[arg-type]


def model_of(method: type[TelegramMethod[Any]]) -> weakref.ref[type]:
    from aiogram.methods import Response

    return weakref.ref(Response[method.__returning__])  # type: ignore[name-defined]


async def test_a_kept_response_model_survives_a_collection_and_others_do_not() -> None:
    from aiogram.methods import GetMyCommands, GetWebhookInfo, Response

    from bot.responses import KeepResponseModels

    keep = KeepResponseModels()
    await through(keep, GetWebhookInfo())
    kept, unkept = model_of(GetWebhookInfo), model_of(GetMyCommands)

    gc.collect()

    assert unkept() is None, "without the middleware the model is freed (and rebuilt later)"
    assert kept() is not None
    assert Response[GetWebhookInfo.__returning__] is kept(), "the very same class, not rebuilt"
    assert list(keep.kept) == [GetWebhookInfo]
