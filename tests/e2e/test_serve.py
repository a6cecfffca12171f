"""`rigcheck serve`: the real binary on loopback only, behind its token, refusing other hosts and foreign sockets."""

from __future__ import annotations

import argparse
import http.client
import os
import re
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
from rigcheck.engine.exits import EXIT_PORT_TAKEN, EXIT_USAGE
from rigcheck.tui.loopback import is_loopback
from rigcheck.tui.serve import INSTALL_HINT, OPEN_FLAG, app_args
from rigcheck.tui.serve_argv import APP_BOOTSTRAP, app_argv

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
    token: str = ""


ADDRESS = re.compile(r"http://\S+:(\d+)/\?token=([A-Za-z0-9_-]+)")


def wait_listening(served: Served, timeout: float = 60) -> None:
    """Until serve prints its address (it does once every socket is bound); its token is read from there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ADDRESS.search(served.log.read_text())
        if found:
            assert int(found[1]) == served.port, found[0]
            served.token = found[2]
            return
        assert served.process.poll() is None, f"serve exited early:\n{served.log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"serve never said where it listens:\n{served.log.read_text()}")


def start(
    tmp_path: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    cwd: Path | None = None,
) -> Served:
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*(argv or [RIGCHECK]), "serve", "--port", str(port), "--device", "cpu", "--profile", "quick", *extra],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env or serve_env(tmp_path),
            cwd=cwd,
        )
    return Served(process, port, log)


def stop(served: Served) -> int:
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGINT)
    try:
        return served.process.wait(60)
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
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
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


def test_listens_on_loopback_only_and_ctrl_c_exits_130(served: Served) -> None:
    listening = [c for c in psutil.Process(served.process.pid).net_connections("inet") if c.status == "LISTEN"]
    assert listening, "serve holds no listening socket"
    assert {c.laddr.ip for c in listening} == {"127.0.0.1", "::1"}  # nobody else can take [::1]:PORT
    assert {c.laddr.port for c in listening} == {served.port}
    status, page = get(served.port, f"/?token={served.token}", {"Host": f"127.0.0.1:{served.port}"})
    assert status == 200
    assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/{served.token}/ws"' in page
    assert stop(served) == 130
    assert ("runs as root" in served.log.read_text()) == (os.geteuid() == 0)  # the real euid, not a faked one


def test_page_links_to_the_address_the_browser_used(served: Served) -> None:
    # ssh -L 9000:localhost:PORT: the browser asks for localhost:9000, and the websocket must go there too
    status, page = get(served.port, f"/?token={served.token}", {"Host": "localhost:9000"})
    assert status == 200
    assert f'data-session-websocket-url="ws://localhost:9000/{served.token}/ws"' in page
    assert f'href="http://localhost:9000/{served.token}/static/css/xterm.css"' in page


def test_the_page_has_a_title_so_the_browser_shows_no_address_with_the_token(served: Served) -> None:
    status, page = get(served.port, f"/?token={served.token}", {"Host": f"127.0.0.1:{served.port}"})
    assert status == 200
    titles = re.findall(r"<title>(.*?)</title>", page, re.S)
    assert titles == ["rigcheck"], titles  # one, in the head, without the token
    assert page.index("<title>") < page.index("</head>")


def test_page_files_and_websocket_need_the_token(served: Served) -> None:
    token, host = served.token, {"Host": f"127.0.0.1:{served.port}"}
    wrong = ("wrong", "A" * len(token), token[:-1], token + "x", token.upper() if token != token.upper() else "a")

    def status(path: str, headers: dict[str, str] = host) -> int:
        return get(served.port, path, headers)[0]

    assert status("/") == 403
    assert all(status(f"/?token={guess}") == 403 for guess in (*wrong, "%C3%A9", "%FF", ""))
    assert status(f"/?token={token}") == 200
    assert status("/static/js/textual.js") == 403  # textual-serve's own place for its files
    assert all(status(f"/{guess}/static/js/textual.js") == 403 for guess in wrong)
    assert status(f"/{token}/static/js/textual.js") == 200
    assert (
        status(f"/{token}/static/../../server.py") in (403, 404) and status(f"/{token}/static/%2e%2e/server.py") == 404
    )
    assert status("/download/anything") == 403  # textual-serve's download route is not served
    socket_headers = {**WEBSOCKET, **host}
    assert status("/ws", socket_headers) == 403
    assert all(status(f"/{guess}/ws", socket_headers) == 403 for guess in wrong)
    assert all(status(f"/ws?token={guess}", socket_headers) == 403 for guess in wrong)
    assert status(f"/ws?token={token}", socket_headers) == 404  # textual-serve's socket route is not served
    refused = get(served.port, "/", host)[1]
    assert "token" in refused and token not in refused
    stop(served)
    assert served.log.read_text().count(token) == 1, "the token is in serve's log beyond the address it printed"


def test_refuses_foreign_origin_and_dns_rebinding(served: Served) -> None:
    host, socket_path = f"127.0.0.1:{served.port}", f"/{served.token}/ws"
    foreign = get(served.port, socket_path, {**WEBSOCKET, "Host": host, "Origin": "http://evil.example"})
    assert foreign[0] == 403 and "Origin" in foreign[1]
    rebound = get(served.port, socket_path, {**WEBSOCKET, "Host": f"evil.example:{served.port}"})
    assert rebound[0] == 403 and "not a loopback name" in rebound[1]
    assert get(served.port, f"/?token={served.token}", {"Host": f"evil.example:{served.port}"})[0] == 403
    own = get(served.port, socket_path, {**WEBSOCKET, "Host": host, "Origin": f"http://{host}"})
    assert own[0] == 101  # the same page's socket is let through (its app ends when the socket closes)


def open_tab(served: Served) -> socket.socket:
    """A websocket held open, as a browser tab holds it: serve starts the tab's app for it."""
    tab = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    headers = {**WEBSOCKET, "Host": f"127.0.0.1:{served.port}"}
    request = f"GET /{served.token}/ws?width=80&height=24 HTTP/1.1\r\n"
    tab.sendall((request + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
    assert tab.recv(4096).startswith(b"HTTP/1.1 101"), "the websocket was refused"
    return tab


def wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_token_can_be_set_and_the_tabs_never_see_it(tmp_path: Path) -> None:
    chosen = "my-bookmarked-token_0123456789"
    serving = start(tmp_path, env={**serve_env(tmp_path), "RIGCHECK_SERVE_TOKEN": chosen})
    try:
        wait_listening(serving)
        assert serving.token == chosen
        assert get(serving.port, f"/?token={chosen}", {"Host": f"127.0.0.1:{serving.port}"})[0] == 200
        tab = open_tab(serving)
        try:
            wait_until(lambda: app_processes(serving.process.pid), 60, "the tab's app never started")
            environ = Path(f"/proc/{app_processes(serving.process.pid)[0].pid}/environ").read_bytes()
            assert b"TEXTUAL_DRIVER=" in environ and b"RIGCHECK_SERVE_TOKEN" not in environ
        finally:
            tab.close()
    finally:
        assert stop(serving) == 130
    for bad in ("short", "sixteen chars ok", "ab/cdefghijklmnopq", ""):
        done = subprocess.run(
            [RIGCHECK, "serve", "--device", "cpu", "--port", str(free_port())],
            capture_output=True,
            text=True,
            env={**serve_env(tmp_path), "RIGCHECK_SERVE_TOKEN": bad},
            timeout=120,
        )
        assert done.returncode == 2 and done.stdout == "", (bad, done)
        assert done.stderr.splitlines() == [done.stderr.strip()] and "RIGCHECK_SERVE_TOKEN" in done.stderr, bad


def test_ctrl_c_with_a_tab_open_exits_130_and_ends_the_tab(served: Served) -> None:
    tab = open_tab(served)
    try:
        wait_until(lambda: app_processes(served.process.pid), 60, "the tab's app never started")
        apps = app_processes(served.process.pid)
        assert stop(served) == 130
        _gone, alive = psutil.wait_procs(apps, timeout=30)
        assert not alive, "the tab's app outlived serve"
    finally:
        tab.close()


def as_user(euid: int) -> list[str]:
    """The CLI with the euid that serve's warnings see faked (only theirs: the store's checks see the real one)."""
    code = (
        "import sys; import rigcheck.tui.serve as serve; real = serve.warnings; "
        f"serve.warnings = lambda args, euid: real(args, {euid}); "
        "from rigcheck.tui.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("euid", [0, 1000])
def test_root_is_warned_that_every_tab_runs_as_root(tmp_path: Path, euid: int) -> None:
    port = free_port()
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [*as_user(euid), "serve", "--port", str(port), "--device", "cpu"],
            stdout=stdout,
            stderr=stderr,
            env=serve_env(tmp_path),
        )
    serving = Served(process, port, out)
    try:
        wait_listening(serving)
    finally:
        assert stop(serving) == 130
    said = err.read_text().splitlines()
    if euid == 0:
        assert len(said) == 1 and "runs as root" in said[0] and "every browser tab" in said[0], said
    else:
        assert said == []


def test_a_gpu_this_host_lacks_is_refused_as_run_refuses_it(tmp_path: Path) -> None:
    commands = {
        "serve": ["serve", "--device", "cuda:63"],
        "run": ["run", "probe", "--device", "cuda:63"],
        "serve a list": ["serve", "--device", "cuda:0,cuda:63"],
    }
    said = {}
    for name, command in commands.items():
        done = subprocess.run(
            [RIGCHECK, *command], capture_output=True, text=True, env=serve_env(tmp_path), timeout=120
        )
        lines = done.stderr.splitlines()
        assert done.returncode == 2 and done.stdout == "", (name, done)
        assert len(lines) == 1 and "--device" in lines[0], (name, done.stderr)
        said[name] = lines[0]
    # on a host with no GPU driver both say so without asking torch; with a driver, torch's answer
    assert said["serve"] == said["run"], said
    assert said["serve"].startswith(("rigcheck: --device cuda:63: torch", "rigcheck: --device cuda:63: this host")), (
        said
    )


def test_a_busy_port_is_one_line_and_its_own_exit_code(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        done = subprocess.run(
            [RIGCHECK, "serve", "--device", "cpu", "--port", str(taken.getsockname()[1])],
            capture_output=True,
            text=True,
            env=serve_env(tmp_path),
            timeout=120,
        )
    finally:
        taken.close()
    assert done.returncode == EXIT_PORT_TAKEN != EXIT_USAGE
    assert done.stdout == ""  # nothing about serving: it never did
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot listen on" in lines[0] and "--port" in lines[0], done.stderr


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
    assert f"ssh -L {port}:127.0.0.1:{port}" in lines[0]


def test_open_host_with_the_flag_warns_and_binds_it(tmp_path: Path) -> None:
    serving = start(tmp_path, "--host", "0.0.0.0", OPEN_FLAG)
    try:
        wait_listening(serving)
        listening = [c for c in psutil.Process(serving.process.pid).net_connections("inet") if c.status == "LISTEN"]
        assert {c.laddr.ip for c in listening} == {"0.0.0.0"}
    finally:
        stop(serving)
    log = serving.log.read_text()
    assert "over plain HTTP: the token crosses the network unencrypted" in log
    assert f"http://{socket.gethostname()}:{serving.port}/?token={serving.token}" in log


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = {
        ("--profile", "bogus"): "bad profile",
        ("--port", "0"): "--port",
        ("--store", str(tmp_path / "missing" / "s.db")): "does not exist",
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


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "192.0.2.7", "example.com", ""))


def test_app_argv_passes_the_app_options_without_a_shell(tmp_path: Path) -> None:
    store = tmp_path / "a folder" / "it's.db"
    args = argparse.Namespace(
        store=str(store), device="cuda:0,cuda:1", profile="full", python="/opt/py 3/python", ascii=True
    )
    words = app_argv(app_args(args), python="/venv/bin/python")
    assert words == [
        "/venv/bin/python",
        *("-c", APP_BOOTSTRAP, str(os.getpid()), "app", "--profile", "full", "--store", str(store)),
        *("--device", "cuda:0,cuda:1", "--python", "/opt/py 3/python", "--ascii"),
    ]
    bare = argparse.Namespace(store=None, device=None, profile="standard", python=None, ascii=False)
    assert app_args(bare) == ["--profile", "standard"]
    assert app_argv([], python="venv/bin/python")[0] == str(Path.cwd() / "venv/bin/python")  # absolute


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
            command = " ".join(child.cmdline())  # a tab runs rigcheck.tui.entry (serve_argv.APP_BOOTSTRAP)
            ours = "rigcheck.tui.entry" in command or "rigcheck.tui.cli" in command
            if child.status() != psutil.STATUS_ZOMBIE and ours:
                alive.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return alive


@pytest.mark.needs("chromium", "chromedriver")
def test_the_app_in_a_headless_browser(served: Served, tmp_path: Path) -> None:
    """Chromium opens the page; the app draws its Stages and Host load panels; a key typed in the page starts
    probe, which passes; closing the tab ends the tab's app."""
    pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
    from selenium.webdriver.common.action_chains import ActionChains
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
        driver.get(f"http://127.0.0.1:{served.port}/?token={served.token}")
        wait_for(("Stages", "Host load", "probe", "idle"), 30)
        assert len(app_processes(served.process.pid)) == 1
        before = len(driver.execute_script("return window.__terminalText"))
        # the key goes where the page's focus is (the terminal's own textarea, focused by the page or a click)
        ActionChains(driver).move_to_element(driver.find_element(By.CSS_SELECTOR, ".xterm-screen")).click().perform()
        ActionChains(driver).send_keys("1").perform()
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
