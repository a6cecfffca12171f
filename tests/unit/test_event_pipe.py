"""Events go up the pipe as plain values and come back without importing anything from outside."""

from __future__ import annotations

import pickle
import sys
from multiprocessing import Pipe

import pytest
from rigcheck.engine.events import Facts, Measurement, Status, Verdict
from rigcheck.engine.run.event_pipe import ForeignEvent, plain, receive_event, send_event


class VersionLike(str):
    """Stands for torch's TorchVersion: a str subclass from a module the parent must not import."""


class ScalarLike:
    """Stands for a numpy scalar: not a float, but it has .item()."""

    def item(self) -> float:
        return 2.5


def test_foreign_values_become_plain_builtins() -> None:
    figure = Measurement(
        "probe", "x", ScalarLike(), "s", params={"torch": VersionLike("2.13.0"), "list": (VersionLike("a"),)}
    )  # type: ignore[arg-type]
    made = plain(figure)
    assert type(made.value) is float and made.value == 2.5
    assert type(made.params["torch"]) is str and made.params["torch"] == "2.13.0"
    assert type(made.params["list"][0]) is str
    assert made.t == figure.t and made.stage == "probe"
    assert b"VersionLike" not in pickle.dumps(made) and b"ScalarLike" not in pickle.dumps(made)


def test_an_event_sent_through_the_pipe_arrives_whole() -> None:
    reader, writer = Pipe(duplex=False)
    verdict = Verdict("probe", "build", Status.PASS, "ok", {"torch": VersionLike("2.13.0"), "n": 3})
    send_event(writer, verdict)
    send_event(writer, Facts("probe", {"nested": {"deep": [VersionLike("x"), 1.5, None, True]}}))
    got = receive_event(reader)
    assert got == Verdict("probe", "build", Status.PASS, "ok", {"torch": "2.13.0", "n": 3}, t=verdict.t)
    assert receive_event(reader).data == {"nested": {"deep": ["x", 1.5, None, True]}}


def test_an_event_holding_a_foreign_class_is_refused_without_importing_its_module() -> None:
    reader, writer = Pipe(duplex=False)
    raw = pickle.dumps(Verdict("probe", "build", Status.PASS, "ok", {"torch": VersionLike("2.13.0")}))
    assert __name__.encode() in raw  # not made plain: the class is named by its module
    elsewhere = b"Z" * len(__name__)  # a module nobody has, the same length so the pickle stays well formed
    writer.send_bytes(raw.replace(__name__.encode(), elsewhere))
    with pytest.raises(ForeignEvent, match=f"{elsewhere.decode()}.VersionLike"):
        receive_event(reader)
    assert elsewhere.decode() not in sys.modules
