"""The app's keys: every one named where it is used (footer, tab labels, Stages panel) and in the Keys panel.

The footer keeps to one line at 80 columns: the stage keys show as one `1-9 Stage`, and each tab's key is in
its label (`n Running`), so no key is on no screen. Names in the Keys panel are unique: `d` changes the
device a run uses, `i` shows the Device tab.
"""

from __future__ import annotations

from textual.binding import Binding

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
    # 2-9 are system keys: out of the Keys panel, where `1-9 Stage` stands for all nine
    Binding("1", "start_stage(0)", "Stage", key_display="1-9", tooltip="run one stage: its number in Stages"),
    *(Binding(str(n), f"start_stage({n - 1})", f"Run stage {n}", show=False, system=True) for n in range(2, 10)),
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
    Binding("a,d,p,1,2,3,4,5,6,7,8,9", "why_not('a run is in progress: cancel it (c) first')", show=False, system=True),
    Binding("c", "why_not('nothing is running')", show=False, system=True),
]
