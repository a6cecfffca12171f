"""A file rigcheck reads from the user (a `--baseline`), checked as what it writes is: its folders, its link, its owner.

A baseline decides verdicts. Read from another user's file, or through her link in /tmp, she would choose what a
root run calls PASS. So every folder on the way is walked (folders.py), a link as the file itself is followed only
where a store's would be (its owner ours or root's, in a folder others may not change), and the file read must
belong to this process's user or to root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rigcheck.engine.store.folders import (
    MAX_LINKS,
    FolderRefused,
    check_folders,
    others_may_change,
    owner_name,
    trusted_owner,
)


def check_given_file(path: Path) -> None:
    """FolderRefused (one line naming the file or folder and why) where another user could choose what is read."""
    for _ in range(MAX_LINKS):
        check_folders(path.parent)
        try:
            info = os.lstat(path)
        except OSError:
            return  # missing or unreachable: the read says so in its own words
        if not stat.S_ISLNK(info.st_mode):
            if not trusted_owner(info.st_uid):
                raise FolderRefused(
                    f"file {path} belongs to {owner_name(info.st_uid)}, who could change it: "
                    "use a file of your own (or root's)"
                )
            return
        if not trusted_owner(info.st_uid):
            raise FolderRefused(f"file {path} is a symbolic link of {owner_name(info.st_uid)}'s; it was not followed")
        if others_may_change(os.stat(path.parent)):
            raise FolderRefused(f"file {path} is a symbolic link in {path.parent}, which other users may change")
        path = path.parent / os.readlink(path)
    raise FolderRefused(f"file {path}: too many symbolic links on the way")
