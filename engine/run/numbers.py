"""Numbers typed on the command line, read strictly: plain ASCII decimals in a stated range, never NaN or infinity.

Python's float() and int() take "nan", "inf", "1_0" and digits of any script ("١" is 1); a NaN time limit
compares false with everything and so silently means no limit at all.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

WEEK_S = 7 * 86400.0
SQLITE_MAX_INT = 2**63 - 1
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
DIGITS = re.compile(r"[0-9]+")


def parse_decimal(text: str) -> float | None:
    """`text` as a finite float when it is a plain ASCII decimal (1, 2.5, 1e3), else None."""
    if not DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if abs(value) != float("inf") else None  # 1e999


def parse_count(text: str, maximum: int = SQLITE_MAX_INT) -> int | None:
    """`text` as a whole number when it is ASCII digits from 0 to `maximum`, else None."""
    if not DIGITS.fullmatch(text) or len(text.lstrip("0")) > len(str(maximum)):
        return None  # before int(): 5,000 digits are a ValueError of Python's own limit
    value = int(text)
    return value if value <= maximum else None


def _range(low: float, high: float, above: bool, below: bool, unit: str) -> str:
    lower = f"above {low:g}" if above else f"at least {low:g}"
    upper = f"below {high:g}" if below else f"at most {high:g}"
    return f"a number{unit} {lower} and {upper}"


def bounded_float(
    low: float, high: float, *, above: bool = False, below: bool = False, unit: str = " of seconds"
) -> Callable[[str], float]:
    """An argparse `type=`: a finite plain decimal from `low` to `high` (`above`/`below` leave the bound out).
    A bad value is argparse's one-line complaint naming the option and the range."""
    wanted = _range(low, high, above, below, unit)

    def parse(text: str) -> float:
        value = parse_decimal(text.strip())
        too_low = value is not None and (value <= low if above else value < low)
        too_high = value is not None and (value >= high if below else value > high)
        if value is None or too_low or too_high:
            raise argparse.ArgumentTypeError(f"{text!r}: give {wanted}")
        return value

    parse.__name__ = "number"
    return parse


def bounded_int(low: int, high: int = SQLITE_MAX_INT) -> Callable[[str], int]:
    """An argparse `type=`: ASCII digits from `low` to `high` (int() would take "١" and any size)."""

    def parse(text: str) -> int:
        value = parse_count(text.strip(), high)
        if value is None or value < low:
            too_big = value is None and parse_count(text.strip(), 10**400) is not None
            wanted = f"from {low} to {high}" if high < SQLITE_MAX_INT or too_big else f"of {low} or more"
            raise argparse.ArgumentTypeError(f"{text!r}: {'too large: ' * too_big}give a whole number {wanted}")
        return value

    parse.__name__ = "number"
    return parse


def given(what: str) -> Callable[[str], str]:
    """An argparse `type=` for a file, device or UUID: an empty value is refused, never read as "not given"
    (`--json ''` would otherwise write nothing and `--baseline ''` judge against the table without a word)."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{text!r}: empty; give {what}")
        return text

    parse.__name__ = "value"
    return parse
