"""The README's join with dcgm-exporter, run by promtool: its relabel config loads, and its query finds dcgm-exporter's
series of the GPU whose rigcheck figure is not TRUSTED, from the labels rigcheck's export really writes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from consumers import readme_join_query, readme_relabel_config, tool
from prometheus_client.parser import text_string_to_metric_families
from rigcheck.engine.report.prom import report_to_prom
from rigcheck.engine.store import Store
from test_prom import UUIDS, local_run

DCGM_LABELS = 'gpu="{gpu}",UUID="GPU-{uuid}",pci_bus_id="0000:1b:00.0",device="nvidia{gpu}",modelName="NVIDIA H200"'


def test_the_readmes_relabel_config_loads_in_promtool(tmp_path: Path) -> None:
    config = readme_relabel_config()
    path = tmp_path / "prometheus.yml"
    path.write_text(config)
    done = subprocess.run([tool("promtool"), "check", "config", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
    relabels = re.findall(r"source_labels: \[(\w+)\], target_label: (\w+)", config)
    assert set(relabels) == {
        ("UUID", "uuid"),
        ("Hostname", "hostname"),
        ("modelName", "model_name"),
    }


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def test_the_readmes_query_joins_rigchecks_series_to_dcgm_exporters(tmp_path: Path) -> None:
    query = readme_join_query()
    report = Store(tmp_path / "s.db").report(local_run(Store(tmp_path / "s.db")))
    assert report is not None
    exported = {f.name: f.samples for f in text_string_to_metric_families(report_to_prom(report))}
    rigcheck = [s for s in exported["rigcheck_figure_trusted"] if s.labels["device"].startswith("cuda:")]
    assert {s.labels["uuid"] for s in rigcheck} == {f"GPU-{uuid}" for uuid in UUIDS}
    inputs = [{"series": series(s.name, s.labels), "values": f"{s.value:g} {s.value:g}"} for s in rigcheck]
    host = rigcheck[0].labels["hostname"]
    dcgm = [DCGM_LABELS.format(gpu=gpu, uuid=uuid) + f',Hostname="{host}"' for gpu, uuid in enumerate(UUIDS)]
    inputs += [{"series": "DCGM_FI_DEV_GPU_TEMP{" + labels + "}", "values": "61 61"} for labels in dcgm]
    (untrusted,) = {s.labels["gpu"] for s in rigcheck if s.value == 0}  # cuda:1's SUSPECT figure (twice)
    expected = dcgm[int(untrusted)] + f',uuid="GPU-{UUIDS[int(untrusted)]}"'
    (tmp_path / "rules.yml").write_text(json.dumps({"groups": [{"name": "join", "rules": []}]}))  # JSON is YAML
    case = {
        "interval": "1m",
        "input_series": inputs,
        "promql_expr_test": [
            {
                "expr": query,
                "eval_time": "1m",
                "exp_samples": [{"labels": "DCGM_FI_DEV_GPU_TEMP{" + expected + "}", "value": 61}],
            }
        ],
    }
    test = tmp_path / "test.yml"
    test.write_text(json.dumps({"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [case]}))
    done = subprocess.run([tool("promtool"), "test", "rules", str(test)], capture_output=True, text=True)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
    case["promql_expr_test"][0]["expr"] = query.replace('"uuid"', '"UUID_"')  # joined on nothing: finds nothing
    test.write_text(json.dumps({"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [case]}))
    assert subprocess.run([tool("promtool"), "test", "rules", str(test)], capture_output=True).returncode != 0
