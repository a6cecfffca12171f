"""`rigcheck export RUN --format html`: one self-contained page holding the run's facts, figures against their
references, health grid, telemetry timelines and GPUs against their peers; no address to fetch; the store's
text escaped."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from fleet_store import FAILING, HOSTS, fleet_run
from html_page import Page
from html_store import gpu_run
from rigcheck.engine.events import Measurement
from rigcheck.engine.store import Store
from stored_runs import two_gpu_run

HOSTILE = "<script>alert(1)</script>"
FETCHING_TAGS = {
    "script",
    "link",
    "img",
    "iframe",
    "object",
    "embed",
    "image",
    "video",
    "audio",
    "source",
}  # <use> is checked: #id only


def export(store_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return rigcheck("export", "last", "--format", "html", *extra, store=store_path)


def page_of(store_path: Path, tmp_path: Path) -> tuple[str, Page]:
    out = tmp_path / "run.html"
    done = export(store_path, "-o", str(out))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert page.problems == [], page.problems[:5]
    return text, page


@pytest.fixture(scope="module")
def gpu_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Page]:
    folder = tmp_path_factory.mktemp("html")
    gpu_run(Store(folder / "s.db"))
    return page_of(folder / "s.db", folder)


def test_it_holds_every_section_in_order(gpu_page: tuple[str, Page]) -> None:
    _, page = gpu_page
    assert list(page.sections) == ["facts", "verdicts", "figures", "health", "timelines", "peers"]


def test_facts_name_the_host_versions_and_devices(gpu_page: tuple[str, Page]) -> None:
    _, page = gpu_page
    assert page.row_of("facts", "status")[1] == "complete (exit code 0)"
    assert page.row_of("facts", "profile")[1] == "standard"
    assert page.row_of("facts", "torch")[1] == "2.11.0+cu130 (CUDA)"
    assert page.row_of("facts", "driver")[1] == "NVIDIA 580.95.05"
    assert page.row_of("facts", "CPUs")[1] == "224 logical, 112 cores, 224 usable"
    assert page.row_of("facts", "1") == ["1", "NVIDIA H200", "sm_90", "132 SMs", "140.4 GiB", "140.4 GiB",
                                         "0000:43:00.0", "GPU-5d1c-1"]  # fmt: skip
    assert page.row_of("facts", "NCCL_P2P_DISABLE") == ["NCCL_P2P_DISABLE", "1"]


def test_every_figure_with_its_trust_reasons_and_reference(gpu_page: tuple[str, Page]) -> None:
    _, page = gpu_page
    slow = page.row_of("figures", "matmul", "matmul bf16 8192", "cuda:1")
    assert slow[3:8] == ["612.3 TFLOP/s", "±0.4%", "20", "SUSPECT", slow[7]]
    assert slow[7] == "SM clock at 73% of max: sw power cap note: power-limited at 700 W"
    assert slow[8] == "WARN 79% of the H200's rigcheck-measured 779.4 TFLOP/s [1]"
    fast = page.row_of("figures", "matmul", "matmul bf16 8192", "cuda:0")
    assert fast[6:] == ["TRUSTED", "", "PASS 97% of the H200's rigcheck-measured 779.4 TFLOP/s [1]"]
    copy = page.row_of("figures", "matmul", "device copy 4 GiB", "cuda:1")
    assert copy[3] == "4,190 GB/s" and copy[8] == "PASS 98% of the H200's rigcheck-measured 4,259 GB/s [1]"
    cpu = page.row_of("figures", "matmul", "matmul fp32 4096", "cpu")
    assert cpu[6:] == ["NOISY", "timing spread 14% of the median", ""]  # no reference for a CPU figure
    cited = "References: rigcheck's quiet default run on one H200 SXM, in 3 separate device calls"
    assert cited in page.sections["figures"].words()
    verdict = page.row_of("verdicts", "matmul", "reference matmul bf16 8192")
    assert verdict[2:4] == ["cuda:1", "WARN"] and "79% of the H200's" in verdict[4]


def test_the_health_grid(gpu_page: tuple[str, Page]) -> None:
    _, page = gpu_page
    assert page.row_of("health", "device") == ["device", "ecc", "pcie", "xid"]
    assert page.row_of("health", "cuda:0") == ["cuda:0", "PASS", "PASS", "PASS"]
    assert page.row_of("health", "cuda:1") == ["cuda:1", "PASS", "WARN", "PASS"]
    assert "WARN cuda:1 PCIe link at Gen4 x16 of Gen5 x16" in page.sections["health"].words()


def test_timelines_draw_every_sensor_of_the_whole_run(gpu_page: tuple[str, Page]) -> None:
    _, page = gpu_page
    timelines = page.sections["timelines"]
    assert "120 samples" in timelines.words()
    titles = [plot.texts for plot in timelines.plots]
    assert [t[0] if t else "" for t in titles] and len(titles) == 4
    every = [" ".join(t) for t in titles]
    assert "Clocks" in every[0] and "GPU 0 SM clock" in every[0] and "GPU 1 SM clock" in every[0]
    assert "CPU clock" in every[0] and "probe" in every[0] and "health" in every[0]  # the stages, named
    assert "Temperature" in every[1] and "GPU 1 temperature" in every[1]
    assert "Power" in every[2] and "GPU 0 power limit" in every[2]
    assert "Host load (of 224 CPUs)" in every[3] and "CPUs busy, other processes" in every[3]


def test_peers_draw_each_gpu_the_slow_one_red(gpu_page: tuple[str, Page]) -> None:
    _, page = gpu_page
    plots = {plot.texts[-1] if "(NVIDIA H200)" in plot.texts[-1] else " ".join(plot.texts): plot
             for plot in page.sections["peers"].plots}  # fmt: skip
    names = sorted(k for k in plots if "(NVIDIA H200)" in k)
    assert names == ["device copy 4 GiB (NVIDIA H200)", "matmul bf16 8192 (NVIDIA H200)"], list(plots)
    bf16 = plots["matmul bf16 8192 (NVIDIA H200)"]
    assert {"cuda:0", "cuda:1", "752.4 TRUSTED", "612.3 SUSPECT"} <= set(bf16.texts)
    red = "#c0392b"
    assert bf16.fills.count(red) == 1  # cuda:1, 19% below cuda:0
    assert red not in plots["device copy 4 GiB (NVIDIA H200)"].fills  # 1.4% apart: none slow


def test_nothing_on_the_page_reaches_the_network(gpu_page: tuple[str, Page]) -> None:
    text, page = gpu_page
    assert "://" not in text  # not even a namespace URI: inline SVG needs none in HTML
    assert not {tag for tag, _ in page.tags} & FETCHING_TAGS
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            assert name != "src" and not name.startswith("on"), (tag, name)
            if name in ("href", "xlink:href"):
                assert str(value).startswith("#"), (tag, value)  # only links within the page
            if value and "url(" in value:
                assert re.fullmatch(r"url\(#[\w-]+\)", value.strip()), (tag, name, value)
    style = "".join(page.style_text)
    assert "@import" not in style and "url(" not in style and "@font-face" not in style


def test_the_same_run_exports_to_the_same_bytes(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    gpu_run(store)
    first, second = export(tmp_path / "s.db"), export(tmp_path / "s.db")
    assert first.returncode == 0 and first.stdout == second.stdout  # `-`/no -o: standard output
    assert first.stdout.startswith("<!DOCTYPE html>")


def test_text_from_the_store_is_escaped_everywhere(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = gpu_run(store, reason=HOSTILE)
    conditions = {"trust": "TRUSTED", "gpu_name": "NVIDIA H200", "verified": True}
    for gpu, value in enumerate((10.0, 5.0)):  # a hostile figure name, drawn in the peers plot too
        params = {"bound": "compute", "timer": "events"}
        store.record(run_id, Measurement("matmul", "<b>x</b> & $y$", value, "TFLOP/s", None, 3, f"cuda:{gpu}",
                                         params, conditions))  # fmt: skip
    text, page = page_of(tmp_path / "s.db", tmp_path)
    assert HOSTILE not in text and "<b>x</b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert not [tag for tag, _ in page.tags if tag in ("script", "b")]
    assert page.row_of("figures", "matmul", "matmul bf16 8192", "cuda:1")[7].startswith(HOSTILE)
    assert page.row_of("figures", "matmul", "<b>x</b> & $y$", "cuda:0")[3] == "10 TFLOP/s"
    plots = [" ".join(p.texts) for p in page.sections["peers"].plots]
    assert any("<b>x</b> & $y$ (NVIDIA H200)" in p for p in plots)  # as text: "$" is no mathtext


def test_a_fleet_run_names_every_host(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    fleet_run(store)
    _, page = page_of(tmp_path / "s.db", tmp_path)
    words = page.sections["facts"].words()
    assert all(f"host {host}" in words for host in HOSTS)
    assert page.row_of("facts", "device")[1] == "fleet (16 hosts, 1 lost)"
    failing = page.row_of("verdicts", FAILING, "matmul", "sweep", "cuda:3")
    assert failing[4] == "FAIL"
    assert page.row_of("figures", HOSTS[0], "matmul", "matmul bf16 4096", "cuda:0")[4] == "760 TFLOP/s"


def test_a_run_without_probe_or_samples_says_what_is_missing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    two_gpu_run(store)
    _, page = page_of(tmp_path / "s.db", tmp_path)
    assert "Probe did not run in this run" in page.sections["facts"].words()
    assert "No telemetry samples were stored" in page.sections["timelines"].words()
    assert "The health stage did not run" in page.sections["health"].words()
    assert page.row_of("figures", "matmul", "matmul fp32 4096", "cuda:1")[6] == "SUSPECT"


def test_a_damaged_sample_is_one_line_as_for_every_format(tmp_path: Path) -> None:
    run_id = gpu_run(Store(tmp_path / "s.db"))
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("INSERT INTO samples (run_id, t, data) VALUES (?, ?, ?)", (run_id, 1.0, "{not json"))
    assert_one_line_error(export(tmp_path / "s.db"), "damaged")
    assert not list(tmp_path.glob("*.html"))


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    gpu_run(Store(tmp_path / "s.db"))
    assert_one_line_error(rigcheck("export", "last", "--format", "htm", store=tmp_path / "s.db"), "html")
    assert_one_line_error(export(tmp_path / "s.db", "-o", str(tmp_path / "missing" / "r.html")), "--output")
    assert_one_line_error(rigcheck("export", "9", "--format", "html", store=tmp_path / "s.db"), "no run 9")


def test_the_export_loads_neither_torch_nor_the_terminal_libraries_nor_matplotlib(tmp_path: Path) -> None:
    gpu_run(Store(tmp_path / "s.db"))
    code = (
        "import sys, json\n"
        "from rigcheck.engine.store import Store\n"
        "from rigcheck.engine.report.html_report import export_html\n"
        f"assert export_html(Store({str(tmp_path / 's.db')!r}), 1).startswith('<!DOCTYPE html>')\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert not {"torch", "textual", "rich", "matplotlib"} & modules  # the plots are drawn by hand
