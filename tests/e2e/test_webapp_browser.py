"""The Mini App in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium with the system driver, nothing downloaded) at a
phone's size opens the page with a signed initData, reads the timeline and a topic, edits
a fact, deletes a person, pauses and cancels a task, and `topica export` and
`topica tasks list` show the changes. A screenshot of each
view goes to `test-output/miniapp/` for a person to look at.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from bot.webapp.api import serve_webapp
from cli.main import main
from tests.support.paths import ROOT
from tests.support.processes import free_port
from tests.support.webapp import TOKEN, Seeded, init_data, seed_user

pytestmark = pytest.mark.timeout(120)

USER = 4242
SHOTS = ROOT / "test-output" / "miniapp"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
THEME = {"bg_color": "#17212b", "text_color": "#f5f5f5", "hint_color": "#708499",
         "link_color": "#6ab3f3", "button_color": "#5288c1", "button_text_color": "#ffffff",
         "secondary_bg_color": "#232e3c"}  # fmt: skip


def browser() -> webdriver.Chrome:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("install Debian's chromium and chromium-driver (.ci/run does)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_experimental_option(
        "mobileEmulation", {"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 1}}
    )
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


def drive(url: str, seeded: Seeded) -> None:
    """The user's walk through the Mini App, a screenshot of each view."""
    driver = browser()
    wait = WebDriverWait(driver, 10)

    def shot(name: str) -> None:
        driver.save_screenshot(str(SHOTS / f"{name}.png"))

    def tab(name: str, selector: str) -> None:
        # The view before the tap may hold the selector too (a topic's page shows its
        # facts): wait until the tab's render has replaced it.
        before = driver.find_elements(By.CSS_SELECTOR, "#view > *")
        driver.find_element(By.ID, f"tab-{name}").click()
        if before:
            wait.until(ec.staleness_of(before[0]))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, selector)))

    try:
        driver.get(url)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".topic a")))
        assert "Chess with Annaalpha" in driver.find_element(By.ID, "view").text
        assert driver.find_element(By.ID, "tab-facts").text == "Факты"
        shot("1-timeline")
        driver.find_element(By.CSS_SELECTOR, ".topic a").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".message")))
        shot("2-topic")

        tab("facts", ".fact")
        fact = driver.find_element(By.CSS_SELECTOR, ".fact")
        fact.find_element(By.XPATH, ".//button[text()='Изменить']").click()
        text = fact.find_element(By.TAG_NAME, "textarea")
        text.clear()
        text.send_keys("Plays go with Annaalpha on Sundays")
        shot("3-fact-editing")
        fact.find_element(By.CSS_SELECTOR, "button.primary").click()
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".fact"), "on Sundays"))
        shot("4-facts")

        tab("people", ".person")
        shot("5-people")
        boris = next(
            card
            for card in driver.find_elements(By.CSS_SELECTOR, ".person")
            if card.find_element(By.TAG_NAME, "b").text == "Borisalpha"
        )
        delete = boris.find_element(By.CSS_SELECTOR, "button.danger")
        delete.click()
        delete.click()  # the second tap confirms
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".person")) == 1)
        assert "Annaalpha" in driver.find_element(By.CSS_SELECTOR, ".person b").text
        shot("6-people-after-delete")

        tab("answers", ".answer")
        shot("7-answers")
        tab("tasks", ".task")
        task = driver.find_element(By.CSS_SELECTOR, ".task")
        task.find_element(By.XPATH, ".//button[text()='Пауза']").click()
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".task"), "на паузе"))
        assert "Следующий запуск: 2027-04-06 09:00 UTC" in task.text
        shot("8-tasks-paused")
        cancel = task.find_element(By.CSS_SELECTOR, "button.danger")
        cancel.click()
        cancel.click()  # the second tap confirms
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".task"), "отменена"))
        assert task.find_elements(By.TAG_NAME, "button") == []
        assert "Следующий запуск" not in task.text and "null" not in task.text
        shot("9-tasks-cancelled")
        tab("more", ".card button")
        shot("10-forget-export")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    except Exception:
        shot("failed")
        raise
    finally:
        driver.quit()


async def test_mini_app_in_a_phone_sized_browser(make_deps, tmp_path, capsys) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager never downloads
    data_dir = tmp_path / "data"
    deps = make_deps(data_dir=data_dir, telegram_token=TOKEN, allowed_user_ids=[USER])
    seeded = seed_user(deps, USER, "alpha")
    port = free_port()
    runner = await serve_webapp(deps, "127.0.0.1", port)
    fragment = "tgWebAppData={}&tgWebAppVersion=8.0&tgWebAppThemeParams={}".format(
        quote(init_data(USER, language="ru"), safe=""), quote(json.dumps(THEME), safe="")
    )
    try:
        await asyncio.to_thread(drive, f"http://127.0.0.1:{port}/webapp/#{fragment}", seeded)
    finally:
        await runner.cleanup()

    capsys.readouterr()
    argv = ["export", "--data-dir", str(data_dir), "--user", str(USER)]
    assert await asyncio.to_thread(main, argv) == 0
    exported = json.loads(capsys.readouterr().out)
    [fact] = exported["facts"]
    assert fact["content"] == "Plays go with Annaalpha on Sundays"
    assert [p["name"] for p in exported["people"]] == ["Annaalpha"]
    edits = [h for h in exported["fact_history"] if h["action"] == "update"]
    assert edits[-1]["reason"] == "edited by the user"
    argv = ["tasks", "list", "--json", "--data-dir", str(data_dir), "--user", str(USER)]
    assert await asyncio.to_thread(main, argv) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(t["id"], t["state"]) for t in listed] == [(seeded.task_id, "cancelled")]
