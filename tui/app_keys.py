"""The app's keys: every one named where it is used (footer, tab labels, Stages panel) and in the Keys panel.

The footer keeps to one line at 80 columns: the stage keys show as one `1-9 Stage`, and each tab's key is in
its label (`n Running`), so no key is on no screen. Names in the Keys panel are unique: `d` changes the
device a run uses, `i` shows the Device tab.
"""

from __future__ import annotations

from collections.abc import Iterable

from rigcheck.tui.widgets.bench_panel import BenchPanel
from rigcheck.tui.widgets.clocks_panel import ClocksPanel
from rigcheck.tui.widgets.results_panel import ResultsPanel
from rigcheck.tui.widgets.stage_keys import STAGE_KEYS
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, TabbedContent

# The tabs without a key of their own elsewhere (Results is r, Processes o): (key, tab id, title, palette help)
TABS = (
    ("n", "tab-running", "Running", "the running stage's figures as they arrive, and why each has its trust"),
    ("i", "tab-device", "Device", "what probe found: GPUs, driver, torch, CPU (i)"),
    ("l", "tab-log", "Log", "the run's log lines and each stage's start and end (l)"),
    ("b", "tab-burn", "Burn", "the burn stage's plot: throughput and SM clock over time (b)"),
)
TAB_KEYS = {tab: key for key, tab, _, _ in TABS} | {"tab-results": "r", "tab-processes": "o"}


def tab_label(tab: str, title: str) -> str:
    """`n Running`: the key that shows the tab, in bold, before its title."""
    key = TAB_KEYS.get(tab)
    return f"[b]{key}[/b] {title}" if key else title


BINDINGS = [
    # the other stage keys are system keys: out of the Keys panel, where `1-9 Stage` stands for them all
    Binding("1", "start_stage(0)", "Stage", key_display="1-9", tooltip="run one stage: its number in Stages"),
    *(
        Binding(key, f"start_stage({n})", f"Run stage {key}", show=False, system=True)
        for n, key in enumerate(STAGE_KEYS)
        if n
    ),
    Binding("a", "start_all", "Run all", tooltip="every stage of the profile"),
    Binding("c", "cancel", "Cancel", tooltip="the running stage; the next one still runs"),
    Binding("d", "cycle_device", "Device", tooltip="run on the next device: cpu, each GPU, all"),
    Binding("p", "cycle_profile", "Profile", tooltip="the next profile: quick, standard, full"),
    Binding("h", "history", "History", tooltip="past runs; compare two"),
    Binding("question_mark,f1", "toggle_keys", "Keys", key_display="?", tooltip="this panel; esc closes it"),
    Binding("escape", "hide_keys", "Close keys", show=False),
    Binding("g", "next_gpu", "Next GPU", show=False, tooltip="the Clocks panel follows the next GPU"),
    Binding("o", "show_processes", "Processes tab", show=False),
    Binding("r", "results", "Results tab", show=False),
    *(Binding(key, f"show_tab('{tab}')", f"{title} tab", show=False) for key, tab, title, _ in TABS),
    Binding("ctrl+q,ctrl+c", "request_quit", "Quit", key_display="^q", priority=True),
    # While a run goes on the footer hides what cannot be done then; these answer those keys with why not.
    Binding(
        ",".join(("a", "d", "p", *STAGE_KEYS)),
        "why_not('a run is in progress: cancel it (c) first')",
        show=False,
        system=True,
    ),
    Binding("c", "why_not('nothing is running')", show=False, system=True),
]

IDLE_ACTIONS = ("start_stage", "start_all", "cycle_device", "cycle_profile")


class KeyActions:
    """The app's answers to keys that only show or tell: tabs, the Keys panel, why a key does nothing now,
    the palette's commands. A mixin of RigcheckApp (tui/app.py); `self` is the app."""

    def action_show_processes(self) -> None:
        self.panel(TabbedContent).active = "tab-processes"

    def action_show_tab(self, tab: str) -> None:
        self.panel(TabbedContent).active = tab
        if tab == "tab-running":  # up and down then move through its figures, and the line below says why
            self.panel(BenchPanel).focus()

    def action_toggle_keys(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_keys()
            return
        # With no widget focused the panel lists rigcheck's own keys first, not a table's cursor keys
        # (at 80x24 those filled it); focus comes back when it closes.
        self._focus_before_keys = self.screen.focused
        self.screen.set_focus(None)
        self.action_show_help_panel()

    def action_hide_keys(self) -> None:
        self.action_hide_help_panel()
        before, self._focus_before_keys = getattr(self, "_focus_before_keys", None), None
        if before is not None and before.is_attached:
            self.screen.set_focus(before)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer shows what can be done now (at 80 columns it cannot hold every key at once): starting
        and choosing while idle, cancelling while a run goes on. Hidden keys still answer, and say why not."""
        if action == "hide_keys":  # esc is the Keys panel's only while it shows
            return bool(self.screen.query("HelpPanel"))
        if action in (*IDLE_ACTIONS, "cancel", "why_not") and self.screen is not getattr(self, "_main_screen", None):
            return False  # history, compare, a result's detail: their own keys, not the main screen's
        if action in IDLE_ACTIONS:
            return not self.running  # when False, the key's why_not binding answers it
        if action == "cancel":
            return self.running
        return True

    def action_why_not(self, said: str) -> None:
        self.notify(said, severity="warning")

    def action_results(self) -> None:
        self.panel(TabbedContent).active = "tab-results"
        self.panel(ResultsPanel).query_one(DataTable).focus()

    def action_next_gpu(self) -> None:
        """The Clocks panel follows the next GPU."""
        source = self.telemetry
        latest = source.latest() if source is not None else None
        indices = [g.index for g in latest.gpus] if latest is not None else []
        if len(indices) < 2:
            self.notify("one GPU or none: nothing to switch to")
            return
        chosen = self.panel(ClocksPanel).cycle_gpu(indices)
        self.notify(f"Clocks: GPU {chosen}")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for index, info in enumerate(self.stage_infos):
            yield SystemCommand(f"Run stage {info.name}", info.summary, lambda i=index: self.action_start_stage(i))
        yield SystemCommand("Run all stages", "every stage in order", self.action_start_all)
        yield SystemCommand("Cancel the running stage", "the next stage still runs", self.action_cancel)
        yield SystemCommand("Next device", f"now {self.device}", self.action_cycle_device)
        yield SystemCommand("Next profile", f"now {self.profile}", self.action_cycle_profile)
        yield SystemCommand("History", "past runs; compare two side by side", self.action_history)
        yield SystemCommand("Next GPU", "the Clocks panel follows the next GPU (g)", self.action_next_gpu)
        yield SystemCommand("Processes", "other processes on each GPU and the host (o)", self.action_show_processes)
        yield SystemCommand(
            "Results", "the run's verdicts and figures; enter shows one in full (r)", self.action_results
        )
        for _, tab, title, help_text in TABS:
            yield SystemCommand(title, help_text, lambda tab=tab: self.action_show_tab(tab))
