"""What each profile promises and how long it took, for `run --help` and the README: apart from the run's plan so
the option parser (which the health gate shares) loads none of the trust code."""

from __future__ import annotations

# What each profile promises, with the time it took on a GPU host, measured (bench/RESULTS.md): `run --help`
# and the README say it. Issue 42 aims at 15 s and 40 s on every GPU machine; its figures replace these once
# bench/profile_times.sh has run there (<!-- filled from bench/RESULTS.md -->).
PROFILE_WORDS = {
    "quick": "one figure of every kind the default judges, at one size: 24-26 s wall on one H200 (2026-12-01); "
    "19-28 s on H100s (2026-12-06)",
    "standard": "the default: every stage but burn, at three sizes: 47-54 s wall on one H200 (2026-12-01/03); "
    "53-58 s on an H100 with a slower host CPU (2026-12-06)",
    "full": "larger sizes and burn (--duration, 300 s by default): many minutes",
}


def profile_help() -> str:
    """`--profile`'s help: each profile, what it runs and how long it took on a GPU host."""
    return "; ".join(f"{name}: {words}" for name, words in PROFILE_WORDS.items())
