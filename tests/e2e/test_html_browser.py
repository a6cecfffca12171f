"""The exported HTML page in headless Chromium, as the engineer's browser opens the attachment: every plot
drawn at a real size, nothing fetched, and a screenshot to look at."""

from __future__ import annotations

import os
import shutil
import struct
import time
from pathlib import Path

import pytest
from cli_calls import rigcheck
from html_store import gpu_run
from rigcheck.engine.store import Store

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
WIDTH = 1280


def chrome(user_data: Path):  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--window-size={WIDTH},800",
        f"--user-data-dir={user_data}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER or ""))


@pytest.mark.needs("chromium", "chromedriver")
def test_the_page_opens_in_chromium_with_every_plot_drawn(tmp_path: Path) -> None:
    gpu_run(Store(tmp_path / "s.db"))
    page = tmp_path / "run.html"
    done = rigcheck("export", "last", "--format", "html", "-o", str(page), store=tmp_path / "s.db")
    assert done.returncode == 0, done.stderr
    driver = chrome(tmp_path / "chromium-profile")
    try:
        driver.get(page.as_uri())
        deadline = time.monotonic() + 60
        while driver.execute_script("return document.readyState") != "complete":
            assert time.monotonic() < deadline, "the page never finished loading"
            time.sleep(0.2)
        sizes = driver.execute_script(
            "return [...document.querySelectorAll('svg.plot')].map(s => {"
            "const r = s.getBoundingClientRect(); return [s.closest('section').id, r.width, r.height]; })"
        )
        assert [s[0] for s in sizes] == ["timelines"] * 4 + ["peers"] * 2, sizes
        assert all(width > 300 and height > 80 for _, width, height in sizes), sizes
        # what the SVGs drew, as the browser laid it out: lines and bars, not empty boxes
        drawn = driver.execute_script(
            "return [...document.querySelectorAll('svg.plot')].map(s => [s.querySelectorAll('polyline').length,"
            " s.querySelectorAll('rect').length, s.querySelectorAll('polyline, line, rect, circle').length,"
            " s.getBBox().width])"
        )
        timelines, peers = drawn[:4], drawn[4:]
        assert all(lines >= 1 and shapes > 10 and wide > 300 for lines, _, shapes, wide in timelines), drawn
        assert all(bars >= 2 for _, bars, _, _ in peers), drawn
        assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0  # nothing fetched
        title = driver.execute_script("return document.querySelector('h1').textContent")
        assert title.startswith("rigcheck run 1 on ")
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(WIDTH, height + 120)  # the whole page in one picture
        shot = Path(os.environ.get("RIGCHECK_HTML_SCREENSHOT", tmp_path / "report.png"))
        driver.save_screenshot(str(shot))
        width, tall = struct.unpack(">II", shot.read_bytes()[16:24])
        assert width == WIDTH and tall > 2000, (width, tall)
    finally:
        driver.quit()
