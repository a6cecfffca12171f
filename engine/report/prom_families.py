"""The Prometheus families rigcheck writes (a gauge and an info family that leave empty labels out) and the name
checks they make: shared by the run's metrics (prom.py), the health gate's (prom_health.py) and telemetry's."""

from __future__ import annotations

import re
from typing import Any

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
from prometheus_client.samples import Sample

Labels = dict[str, str]

# prometheus_client accepts any UTF-8 name and rewrites what the 0.0.4 format cannot hold to underscores;
# a name of ours outside the classic character set is a mistake to stop at, not to write changed
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
# snake_case only: promtool check metrics fails a file with a camelCase label name (dcgm-exporter's modelName)
_LABEL_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _checked_name(name: str) -> str:
    if not _METRIC_NAME.match(name):
        raise ValueError(f"not a Prometheus metric name: {name!r}")
    return name


def kept_labels(labels: dict[str, Any]) -> Labels:
    """The labels with a value, as text; a name Prometheus would not take is an error."""
    kept = {name: str(text) for name, text in labels.items() if text is not None and text != ""}
    for name in kept:
        if not _LABEL_NAME.match(name):
            raise ValueError(f"not a snake_case Prometheus label name: {name!r}")
    return kept


class Gauge(GaugeMetricFamily):
    """A gauge family whose samples may carry different label names (an empty label is left out, as
    dcgm-exporter does), which `add_metric`, with one list of label names for the family, cannot hold."""

    def __init__(self, name: str, documentation: str) -> None:
        super().__init__(_checked_name(name), documentation)

    def add(self, labels: dict[str, Any], value: float | int | bool | None) -> None:
        """One sample; a value of None (not available) is left out, never written as 0."""
        if value is not None:
            self.samples.append(Sample(self.name, kept_labels(labels), float(value)))


class Info(InfoMetricFamily):
    """An info family: always 1, its facts in the labels. Named without `_info`, which the library adds."""

    def __init__(self, name: str, documentation: str) -> None:
        super().__init__(_checked_name(name), documentation)

    def add(self, labels: dict[str, Any]) -> None:
        self.add_metric([], kept_labels(labels))
