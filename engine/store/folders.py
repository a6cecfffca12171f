"""Every folder on the way to a path rigcheck writes, checked: none may let another user choose where it lands.

Checking only the last component (paths.py, atomic_write.py) let a folder on the way be another user's:
with `/tmp/x/o9 -> /root-only-folder` made by `mallory`, root's `--json /tmp/x/o9/run.json` wrote into
the root-only folder, and a store under her folder could be deleted by her. So the path is walked from `/`
one component at a time, without following anything unchecked, and refused (one line naming the folder
and why) where a component:
- belongs to a user who is neither this process's nor root (she could swap what is in it), or
- is writable by everyone without the sticky bit, or by its group when it is not ours or the group has other
  members (root's folder writable by a group of several users let any of them delete or swap the store), or
- is a symbolic link that another user owns, or that sits in a folder others may change.
A link that passes (root's `/var/run -> /run`, the user's own link in their own folder) is followed, and its
target walked the same way. A missing component ends the walk: rigcheck makes it itself, in a folder that passed.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path

MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


class FolderRefused(OSError):
    """A folder on the way to a path may be changed by another user; the message names it and why."""


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid {gid}"


def trusted_owner(uid: int) -> bool:
    """A folder or link that this process's user, or root, owns."""
    return uid in (os.geteuid(), 0)


def group_has_others(gid: int) -> bool:
    """Whether a user other than this process's belongs to group `gid` (listed in it, or as their own group)."""
    try:
        me = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        me = None
    try:
        if any(name != me for name in grp.getgrgid(gid).gr_mem):
            return True
    except KeyError:
        return True  # a group nobody can name: its members cannot be known, so assume others
    return any(user.pw_gid == gid and user.pw_name != me for user in pwd.getpwall())


def others_may_change(info: os.stat_result) -> bool:
    """Whether a folder lets other users rename or remove what is in it, with no sticky bit (the sticky /tmp
    lets each user remove only their own entries): writable by everyone, or by its group when it is not ours
    or the group has other members (a folder of ours writable by our own one-user group is the umask-002
    habit of user-private groups)."""
    if info.st_mode & stat.S_ISVTX:
        return False
    if info.st_mode & stat.S_IWOTH:
        return True
    return bool(info.st_mode & stat.S_IWGRP) and (info.st_uid != os.geteuid() or group_has_others(info.st_gid))


def folder_problem(folder: Path, info: os.stat_result) -> str | None:
    if not trusted_owner(info.st_uid):
        return f"folder {folder} belongs to {owner_name(info.st_uid)}, who could swap what is in it"
    if others_may_change(info):
        mode = stat.S_IMODE(info.st_mode)
        if not mode & stat.S_IWOTH and info.st_uid == os.geteuid():
            return (
                f"folder {folder} is writable by other users (mode {mode:o}): "
                f"its group {group_name(info.st_gid)} has other members"
            )
        return f"folder {folder} is writable by other users (mode {mode:o})"
    return None


def check_folders(folder: Path | str) -> None:
    """Walk `folder` (made absolute) from `/`; FolderRefused when a component may be changed by another user."""
    # Not os.path.abspath: it drops `hers/..` before the walk, while the kernel goes through her link `hers`
    # first and then to the parent of wherever it leads. `..` is taken here as the kernel takes it, component
    # by component, from the real folder reached so far (links are spliced in as they are met).
    parts = list((Path.cwd() / folder).parts[1:])
    here = Path("/")
    links = 0
    while parts:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            here = here.parent
            continue
        path = here / name
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return  # the rest is made by rigcheck, inside `here`, which passed
        if stat.S_ISLNK(info.st_mode):
            above = os.stat(here)
            if not trusted_owner(info.st_uid):
                raise FolderRefused(
                    f"folder {path} is a symbolic link of {owner_name(info.st_uid)}'s; it was not followed"
                )
            if others_may_change(above):
                raise FolderRefused(f"folder {path} is a symbolic link in {here}, which other users may change")
            links += 1
            if links > MAX_LINKS:
                raise FolderRefused(f"folder {path}: too many symbolic links on the way")
            target = Path(os.readlink(path))
            parts = list(target.parts[1:] if target.is_absolute() else target.parts) + parts
            if target.is_absolute():
                here = Path("/")
            continue
        if not stat.S_ISDIR(info.st_mode):
            return  # not a folder: whoever uses the path says so in their own words
        problem = folder_problem(path, info)
        if problem:
            raise FolderRefused(f"{problem}; use a folder of your own")
        here = path
