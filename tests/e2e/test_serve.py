"""`rigcheck serve`: the real binary listening on loopback only, refusing other hosts and foreign sockets."""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from rigcheck.tui.loopback import is_loopback
from rigcheck.tui.serve import INSTALL_HINT, OPEN_FLAG, app_command

RIGCHECK = str(Path(sys.executable).with_name("rigcheck"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "RIGCHECK_STORE": str(tmp_path / "s.db"),
        "RIGCHECK_CONFIG": str(tmp_path / "settings.json"),
        "TEXTUAL_ANIMATIONS": "none",
    }


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    log: Path


def wait_listening(served: Served, host: str = "127.0.0.1", timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert served.process.poll() is None, f"serve exited early:\n{served.log.read_text()}"
        try:
            socket.create_connection((host, served.port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"serve never listened on {host}:{served.port}:\n{served.log.read_text()}")


def start(tmp_path: Path, *extra: str) -> Served:
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [RIGCHECK, "serve", "--port", str(port), "--device", "cpu", "--profile", "quick", *extra],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=serve_env(tmp_path),
        )
    return Served(process, port, log)


def stop(served: Served) -> int:
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGINT)
    try:
        return served.process.wait(15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()
        raise


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    serving = start(tmp_path)
    try:
        wait_listening(serving)
        yield serving
    finally:
        stop(serving)


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


WEBSOCKET = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def test_listens_on_loopback_only_and_stops_on_ctrl_c(served: Served) -> None:
    listening = [c for c in psutil.Process(served.process.pid).net_connections("inet") if c.status == "LISTEN"]
    assert listening, "serve holds no listening socket"
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}
    assert {c.laddr.port for c in listening} == {served.port}
    status, page = get(served.port, "/", {"Host": f"127.0.0.1:{served.port}"})
    assert status == 200
    assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in page
    assert stop(served) == 0


def test_page_links_to_the_address_the_browser_used(served: Served) -> None:
    # ssh -L 9000:localhost:PORT: the browser asks for localhost:9000, and the websocket must go there too
    status, page = get(served.port, "/", {"Host": "localhost:9000"})
    assert status == 200
    assert 'data-session-websocket-url="ws://localhost:9000/ws"' in page


def test_refuses_foreign_origin_and_dns_rebinding(served: Served) -> None:
    host = f"127.0.0.1:{served.port}"
    foreign = get(served.port, "/ws", {**WEBSOCKET, "Host": host, "Origin": "http://evil.example"})
    assert foreign[0] == 403 and "Origin" in foreign[1]
    rebound = get(served.port, "/ws", {**WEBSOCKET, "Host": f"evil.example:{served.port}"})
    assert rebound[0] == 403 and "not a loopback name" in rebound[1]
    assert get(served.port, "/", {"Host": f"evil.example:{served.port}"})[0] == 403
    own = get(served.port, "/ws", {**WEBSOCKET, "Host": host, "Origin": f"http://{host}"})
    assert own[0] == 101  # the same page's socket is let through (its app ends when the socket closes)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "example.com", "::"])
def test_non_loopback_host_without_the_flag_is_one_line_and_exit_2(tmp_path: Path, host: str) -> None:
    port = free_port()
    done = subprocess.run(
        [RIGCHECK, "serve", "--host", host, "--port", str(port)],
        capture_output=True,
        text=True,
        env=serve_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and OPEN_FLAG in lines[0] and "ssh -L" in lines[0], done.stderr


def test_open_host_with_the_flag_warns_and_binds_it(tmp_path: Path) -> None:
    serving = start(tmp_path, "--host", "0.0.0.0", OPEN_FLAG)
    try:
        wait_listening(serving)
        listening = [c for c in psutil.Process(serving.process.pid).net_connections("inet") if c.status == "LISTEN"]
        assert {c.laddr.ip for c in listening} == {"0.0.0.0"}
    finally:
        stop(serving)
    log = serving.log.read_text()
    assert "anyone who can reach this address can start and stop runs" in log


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        cases = {
            ("--profile", "bogus"): "bad profile",
            ("--port", "0"): "bad --port",
            ("--store", str(tmp_path / "missing" / "s.db")): "does not exist",
            ("--port", str(taken.getsockname()[1])): "cannot listen on",
        }
        for extra, expected in cases.items():
            done = subprocess.run(
                [RIGCHECK, "serve", "--device", "cpu", *extra],
                capture_output=True,
                text=True,
                env=serve_env(tmp_path),
                timeout=60,
            )
            lines = done.stderr.splitlines()
            assert done.returncode == 2, (extra, done.stderr)
            assert len(lines) == 1 and expected in lines[0], (extra, done.stderr)
    finally:
        taken.close()


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "192.0.2.7", "example.com", ""))


def test_app_command_passes_the_app_options_quoted(tmp_path: Path) -> None:
    store = tmp_path / "a folder" / "it's.db"
    args = argparse.Namespace(
        store=str(store), device="cuda:0,cuda:1", profile="full", python="/opt/py 3/python", ascii=True
    )
    words = shlex.split(app_command(args, python="/venv/bin/python"))
    assert words == [
        "exec",
        "/venv/bin/python",
        *("-m", "rigcheck.tui.cli", "app", "--profile", "full", "--store", str(store)),
        *("--device", "cuda:0,cuda:1", "--python", "/opt/py 3/python", "--ascii"),
    ]
    bare = argparse.Namespace(store=None, device=None, profile="standard", python=None, ascii=False)
    assert shlex.split(app_command(bare, python="py")) == [
        "exec",
        "py",
        "-m",
        "rigcheck.tui.cli",
        "app",
        "--profile",
        "standard",
    ]


CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
# Keeps a copy of every byte the terminal receives, so the test reads what xterm.js draws on its canvas.
RECORD_TERMINAL = """
window.__terminalText = "";
const NativeWebSocket = window.WebSocket;
window.WebSocket = function (...args) {
  const socket = new NativeWebSocket(...args);
  const decoder = new TextDecoder();
  socket.addEventListener("message", (event) => {
    if (event.data instanceof ArrayBuffer) window.__terminalText += decoder.decode(event.data, {stream: true});
  });
  return socket;
};
window.WebSocket.prototype = NativeWebSocket.prototype;
"""
ESCAPE = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def chrome(user_data: Path):  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,800",
        f"--user-data-dir={user_data}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER or ""))
    metrics = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_TERMINAL})
    return driver


def app_processes(server_pid: int) -> list[psutil.Process]:
    """The server's live app children; one that has exited (a zombie not yet reaped, or gone) does not count."""
    alive = []
    for child in psutil.Process(server_pid).children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "rigcheck.tui.cli" in " ".join(child.cmdline()):
                alive.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return alive


@pytest.mark.needs("chromium", "chromedriver")
def test_the_app_in_a_headless_browser(served: Served, tmp_path: Path) -> None:
    """Chromium opens the page; the app draws its Stages and Host load panels; a key typed in the page starts
    probe, which passes; closing the tab ends the tab's app."""
    pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
    from selenium.webdriver.common.by import By

    driver = chrome(tmp_path / "chromium-profile")

    def drawn(since: int = 0) -> str:
        return ESCAPE.sub("", driver.execute_script("return window.__terminalText")[since:])

    def wait_for(words: tuple[str, ...], timeout: float, since: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while not all(word in drawn(since) for word in words):
            assert time.monotonic() < deadline, f"never drew {words}:\n{drawn(since)[-2000:]}"
            time.sleep(0.2)

    try:
        driver.get(f"http://127.0.0.1:{served.port}/")
        wait_for(("Stages", "Host load", "probe", "idle"), 30)
        assert len(app_processes(served.process.pid)) == 1
        before = len(driver.execute_script("return window.__terminalText"))
        driver.find_element(By.CSS_SELECTOR, "textarea.xterm-helper-textarea").send_keys("1")
        wait_for(("PASS", "run 1 complete"), 60, since=before)
        shot = Path(os.environ.get("RIGCHECK_SERVE_SCREENSHOT", tmp_path / "serve.png"))
        driver.save_screenshot(str(shot))
        assert struct.unpack(">II", shot.read_bytes()[16:24]) == (1280, 800)
    finally:
        driver.quit()
    deadline = time.monotonic() + 10
    while app_processes(served.process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert app_processes(served.process.pid) == [], "the tab's app outlived the tab"


def test_without_textual_serve_it_says_how_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['textual_serve'] = None; sys.modules['textual_serve.server'] = None; "
        "from rigcheck.tui.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "serve", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=serve_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"rigcheck: {INSTALL_HINT}"]
