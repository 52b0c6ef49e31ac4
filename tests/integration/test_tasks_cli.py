"""Tasks from the command line and the application services, on a real SQLite file:
`topica tasks add/list/cancel`, each user's own tasks only, bad input refused with
nothing created, time zones by name or city, and `export` carrying the tasks."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.tasks import TaskError, add_task, change_task, list_tasks, set_user_timezone
from app.views import export_user
from cli.main import main
from core.deps import Deps
from core.when import WhenError

NOW = datetime(2026, 11, 26, 19, 0, tzinfo=UTC)


def topica(data_dir: Path, *args: str) -> tuple[int, str, str]:
    output, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(errors):
        try:
            status = main(["tasks", *args, "--data-dir", str(data_dir)])
        except SystemExit as exit_:  # argparse's own refusals
            status = int(exit_.code or 0)
    return status, output.getvalue(), errors.getvalue()


@pytest.mark.stores("sqlite")
def test_tasks_on_the_command_line(tmp_path: Path):
    data = tmp_path / "data"

    status, out, _ = topica(data, "add", "--user", "5", "--when", "через 2 часа", "позвонить маме")
    assert status == 0 and "task 1: active" in out
    status, out, _ = topica(
        data, "add", "--user", "5", "--when", "every Monday at 10", "report", "--json"
    )
    assert status == 0 and json.loads(out)["recurring"] is True
    status, out, _ = topica(data, "--user", "5", "--json")
    assert [(t["id"], t["request"]) for t in json.loads(out)] == [
        (1, "позвонить маме"),
        (2, "report"),
    ]
    assert "позвонить маме" in topica(data, "--user", "5")[1]

    # a stranger sees and cancels nothing
    assert json.loads(topica(data, "--user", "6", "--json")[1]) == []
    status, _, error = topica(data, "cancel", "1", "--user", "6")
    assert status == 2 and "no task 1" in error
    status, out, _ = topica(data, "cancel", "1", "--user", "5")
    assert status == 0 and "cancelled" in out

    for bad in (["add", "--user", "5", "--when", "blah", "x"], ["add", "--user", "5", "x"]):
        status, _, error = topica(data, *bad)
        assert status == 2 and error.strip()
    assert "через 10 минут" in topica(data, "add", "--user", "5", "--when", "blah", "x")[2]
    states = [t["state"] for t in json.loads(topica(data, "list", "--user", "5", "--json")[1])]
    assert states == ["cancelled", "active"]


def test_services_zones_pause_resume_and_export(deps: Deps, make_messages):
    assert set_user_timezone(deps, 1, "Europe/Moscow") == "Europe/Moscow"
    assert set_user_timezone(deps, 2, "new york") == "America/New_York"
    with pytest.raises(WhenError):
        set_user_timezone(deps, 3, "Atlantis")
    task = add_task(deps, 1, "каждый день в 9:00", "план дня", now=NOW)
    assert list_tasks(deps, 1)[0]["next_run_local"] == "2026-11-27 09:00 MSK"
    assert list_tasks(deps, 2) == []
    with pytest.raises(WhenError):
        add_task(deps, 1, "never ever", "x", now=NOW)
    with pytest.raises(TaskError):
        change_task(deps, 2, task["id"], "pause")

    assert change_task(deps, 1, task["id"], "pause")["state"] == "paused"
    later = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    resumed = change_task(deps, 1, task["id"], "resume", now=later)
    assert (resumed["state"], resumed["next_run_at"]) == ("active", "2026-12-02T06:00:00+00:00")
    assert len(list_tasks(deps, 1, open_only=True)) == 1

    deps.store.messages.add(1, make_messages(["hello"]))
    exported = export_user(deps, 1)
    assert [(t["request"], t["runs"]) for t in exported["tasks"]] == [("план дня", [])]
