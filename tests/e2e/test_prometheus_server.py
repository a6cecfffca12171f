"""A real Prometheus server scrapes rigcheck's export beside a dcgm-exporter page relabelled as the README says, and
the README's query joins the two: the temperature of the GPU whose figure is not TRUSTED, and only that one."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from consumers import readme_join_query, readme_relabel_config
from fleet_driver import free_port
from rigcheck.engine.events import Measurement
from rigcheck.engine.report.prom import report_to_prom
from rigcheck.engine.store import Store

pytestmark = pytest.mark.timeout(180)
UUIDS = ("GPU-8f1c2d3e-0000-4000-8000-00000000000a", "GPU-8f1c2d3e-0000-4000-8000-00000000000b")
DCGM = """# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
""" + "".join(
    f'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",UUID="{uuid}",device="nvidia{i}",modelName="NVIDIA H200",Hostname="HOST"}} {t}\n'
    for i, (uuid, t) in enumerate(zip(UUIDS, (41, 67), strict=True))
)


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[int]:
    """The folder over HTTP on 127.0.0.1, as node_exporter or dcgm-exporter would answer a scrape."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def ask(port: int, query: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)["data"]["result"]


@pytest.mark.needs("prometheus")
def test_prometheus_joins_rigchecks_figures_to_dcgm_exporters_series(tmp_path: Path) -> None:
    prometheus = shutil.which("prometheus")
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["matmul"], "all", "quick", "python3", [])
    for gpu, (value, trust) in enumerate(((771.5, "TRUSTED"), (690.25, "SUSPECT"))):
        params = {"gpu_uuid": UUIDS[gpu].removeprefix("GPU-")}  # as torch stores it
        conditions = {"trust": trust, "gpu_name": "NVIDIA H200"}
        figure = Measurement("matmul", "bf16 4096", value, "TFLOP/s", device=f"cuda:{gpu}", params=params)
        store.record(run_id, dataclasses.replace(figure, conditions=conditions))
    store.end_run(run_id, "complete", 0)
    report = store.report(run_id)
    assert report is not None
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "rigcheck.prom").write_text(report_to_prom(report))
    (pages / "dcgm.prom").write_text(DCGM.replace("HOST", str(report["run"]["host"])))
    config, query = readme_relabel_config(), readme_join_query()
    web = free_port()
    with serving(pages) as port:
        target = f'["127.0.0.1:{port}"]'
        dcgm_job = config.split("scrape_configs:\n", 1)[1].replace('["gpu-host:9400"]', target)
        dcgm_job = dcgm_job.replace("    static_configs", "    metrics_path: /dcgm.prom\n    static_configs", 1)
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s}\nscrape_configs:\n"
            f"  - job_name: rigcheck\n    metrics_path: /rigcheck.prom\n    static_configs: [{{targets: {target}}}]\n"
            + dcgm_job
            + "\n"
        )
        argv = [
            prometheus,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ]
        log = (tmp_path / "prometheus.log").open("wb")
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline, joined = time.monotonic() + 120, []
            while time.monotonic() < deadline and server.poll() is None:
                with contextlib.suppress(OSError, ValueError, KeyError):
                    up = {(r["metric"]["job"], r["value"][1]) for r in ask(web, "up")}
                    joined = ask(web, query)
                    if up == {("rigcheck", "1"), ("dcgm", "1")} and joined:
                        break
                time.sleep(0.5)
            relabelled = [r["metric"] for r in ask(web, "DCGM_FI_DEV_GPU_TEMP")]
        finally:
            server.terminate()
            server.wait(30)
    assert joined, (tmp_path / "prometheus.log").read_text()[-3000:]
    assert [(r["metric"]["gpu"], r["metric"]["uuid"], r["value"][1]) for r in joined] == [("1", UUIDS[1], "67")]
    assert {(m["uuid"], m["hostname"], m["model_name"]) for m in relabelled} == {
        (uuid, report["run"]["host"], "NVIDIA H200") for uuid in UUIDS
    }
