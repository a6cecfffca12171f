"""The Host-load panel: CPUs kept busy by others against rigcheck's own, per-CPU bars, a contention warning."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.telemetry.sample import HostSample
from rigcheck.engine.trust.conditions import DEFAULT_POLICY
from rigcheck.tui.glyphs import UNICODE, Glyphs, bar, level
from rigcheck.tui.widgets.live_text import LiveText

GAUGE_WIDTH = 10


class HostPanel(LiveText):
    def __init__(self, glyphs: Glyphs = UNICODE, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.glyphs = glyphs

    def on_mount(self) -> None:
        self.border_title = "Host load"
        self.styles.text_wrap = "nowrap"
        self.styles.text_overflow = "ellipsis"

    def show(self, host: HostSample | None) -> None:
        if host is None:
            self.set("waiting for telemetry")
            return
        others, own = host.others_cpus, host.own_cpus
        contended = DEFAULT_POLICY.contended(others, host.cpus)
        self.set_class(contended, "contended")
        # The warning goes in the border, the numbers keep the lines: at 80 columns the warning pushed
        # the others' count off the panel.
        title = "Host load"
        if contended:
            title += ": CONTENDED, figures now SUSPECT" if self.size.width >= 44 else ": CONTENDED"
        if self.border_title != title:
            self.border_title = title
        per_cpu = "".join(level(p / 100, self.glyphs) for p in host.per_cpu_pct)
        load = f"load {host.load1:.2f}" if host.load1 is not None else "load N/A"
        count = f"{others:4.1f}/{host.cpus}"
        fixed = len(f"others   {count}  {load}")
        gauge = max(3, min(GAUGE_WIDTH, self.size.width - fixed)) if self.size.width else GAUGE_WIDTH
        self.set(
            Text(
                f"others   {count} {bar(others / host.cpus, gauge, self.glyphs)} {load}\n"
                f"rigcheck {own:4.1f}/{host.cpus} {bar(own / host.cpus, gauge, self.glyphs)} CPUs [{per_cpu}]"
            ),
        )
