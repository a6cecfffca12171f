"""Every folder on the way to what rigcheck writes is checked, with a real second user as the neighbour: a link
she plants as a folder, or a folder of hers, makes rigcheck refuse in one line, exit 2, naming the folder."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from other_user import as_user, second_user, shared_folder
from rigcheck.engine.store import Store, StoreError, folders
from rigcheck.engine.store.folders import FolderRefused, check_folders


@dataclass
class Ground:
    mallory: int
    name: str
    base: Path
    root_only: Path
    hers: Path  # a folder she owns, holding her links to root_only
    sticky: Path  # a root folder anyone may add to, as /tmp


@pytest.fixture
def ground() -> Iterator[Ground]:
    with second_user() as mallory, shared_folder() as base:
        import pwd

        root_only, hers, sticky = base / "root-only", base / "x", base / "sticky"
        root_only.mkdir(mode=0o700)
        hers.mkdir()
        os.chown(hers, mallory, -1)
        sticky.mkdir()
        os.chmod(sticky, 0o1777)
        for link in ("o9", "o11", "o12"):
            as_user(mallory, "ln", "-s", str(root_only), str(hers / link))
        as_user(mallory, "ln", "-s", str(root_only), str(sticky / "o13"))
        yield Ground(mallory, pwd.getpwuid(mallory).pw_name, base, root_only, hers, sticky)
        assert list(root_only.iterdir()) == [], "something was written into the root-only folder"


def test_outputs_through_her_folder_are_refused(ground: Ground, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    Store(store).begin_run(["probe"], "cpu", "quick", sys.executable, [])
    cases = {
        "--json": rigcheck("run", "probe", "--device", "cpu", "--json", str(ground.hers / "o9/run.json"), store=store),
        "--output": rigcheck("export", "last", "-o", str(ground.hers / "o9/victim.json"), store=store),
        "--prom-textfile": rigcheck(
            "monitor", "--prom-textfile", str(ground.hers / "o11"), "--count", "1", store=store
        ),
    }
    for flag, done in cases.items():
        assert_one_line_error(done, flag, f"folder {ground.hers}", f"belongs to {ground.name}")


def test_a_store_through_her_folder_is_refused(ground: Ground) -> None:
    done = rigcheck("history", store=ground.hers / "o12" / "st.db")
    assert_one_line_error(done, "store", f"folder {ground.hers}", f"belongs to {ground.name}")
    (ground.base / "rootlink").symlink_to(ground.hers)  # root's own link, leading into her folder
    done = rigcheck("history", store=ground.base / "rootlink" / "st.db")
    assert_one_line_error(done, "store", f"folder {ground.hers}", f"belongs to {ground.name}")


def test_her_link_in_a_sticky_folder_is_not_followed(ground: Ground, tmp_path: Path) -> None:
    done = rigcheck(
        "run", "probe", "--device", "cpu", "--json", str(ground.sticky / "o13/r.json"), store=tmp_path / "s.db"
    )
    assert_one_line_error(done, "--json", f"folder {ground.sticky / 'o13'}", f"symbolic link of {ground.name}'s")


def test_a_store_in_a_folder_anyone_may_change_is_refused(ground: Ground) -> None:
    """Root's own folder, but writable by all without the sticky bit: she could rename the log folder and put a
    link to a root-only folder in its place, and root would make run-2 there."""
    open_folder = ground.base / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o777)
    with pytest.raises(StoreError, match=f"folder {open_folder} is writable by other users \\(mode 777\\)"):
        Store(open_folder / "st.db")
    as_user(ground.mallory, "ln", "-s", str(ground.root_only), str(open_folder / "st.logs"))
    done = rigcheck("history", store=open_folder / "st.db")
    assert_one_line_error(done, "store", f"folder {open_folder} is writable by other users")


def test_a_log_folder_she_linked_in_a_sticky_folder_is_refused(ground: Ground) -> None:
    Store(ground.sticky / "st.db").make_log_dir(1)  # root's store in a folder anyone may add to
    as_user(ground.mallory, "ln", "-s", str(ground.root_only), str(ground.sticky / "other.logs"))
    with pytest.raises(StoreError, match="symbolic link"):
        Store(ground.sticky / "other.db").make_log_dir(2)


def test_own_links_and_sticky_folders_pass(ground: Ground) -> None:
    mine = ground.base / "mine"
    mine.mkdir()
    (ground.base / "good").symlink_to(mine)
    Store(ground.base / "good" / "st.db").make_log_dir(1)
    assert (mine / "st.db").is_file() and (mine / "st.logs" / "run-1").is_dir()
    Store(ground.sticky / "ok.db").close()
    check_folders(ground.sticky / "new" / "deeper")  # missing folders: rigcheck makes them in a checked one


@pytest.mark.parametrize(
    ("mode", "refused"), [(0o777, True), (0o775, True), (0o757, True), (0o1777, False), (0o1775, False), (0o755, False)]
)
def test_a_folder_others_may_change_is_refused_unless_sticky(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int, refused: bool
) -> None:
    """As a user who is not the folder's owner (root owns it here): writable by group or others without the
    sticky bit lets them rename what is in it."""
    folder = tmp_path / "open"
    folder.mkdir()
    os.chmod(folder, mode)
    monkeypatch.setattr(folders.os, "geteuid", lambda: 4242)
    monkeypatch.setattr(folders, "trusted_owner", lambda uid: uid in (4242, os.getuid()))
    if refused:
        with pytest.raises(FolderRefused, match=f"writable by other users \\(mode {stat.S_IMODE(mode):o}\\)"):
            check_folders(folder / "out")
    else:
        check_folders(folder / "out")


def test_dot_dot_after_her_link_is_walked_as_the_kernel_walks_it(ground: Ground, tmp_path: Path) -> None:
    """Issue 44.5: `sticky/o14/../x.json` read as `sticky/x.json` passed, while the kernel goes through her link
    `o14` (to a folder inside the root-only one) and then up: root wrote into the root-only folder."""
    (ground.root_only / "inner").mkdir()
    as_user(ground.mallory, "ln", "-s", str(ground.root_only / "inner"), str(ground.sticky / "o14"))
    store = tmp_path / "s.db"
    Store(store).begin_run(["probe"], "cpu", "quick", sys.executable, [])
    done = rigcheck("export", "last", "-o", str(ground.sticky / "o14" / ".." / "x.json"), store=store)
    assert_one_line_error(done, "-o", f"folder {ground.sticky / 'o14'}", f"symbolic link of {ground.name}'s")
    assert not (ground.root_only / "x.json").exists()
    (ground.root_only / "inner").rmdir()
    mine = ground.base / "mine2"
    (mine / "sub").mkdir(parents=True)  # a plain `..` still works
    done = rigcheck("export", "last", "-o", str(mine / "sub" / ".." / "x.json"), store=store)
    assert done.returncode == 0 and (mine / "x.json").is_file(), done.stderr
