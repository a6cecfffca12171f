"""Store, journal and log-folder paths checked before use, so another user cannot choose where rigcheck writes.

In a folder anyone can write (a sticky /tmp, common in containers where links are followed anyway) a link
planted in rigcheck's name would send the store or a chmod elsewhere; a file another user owns would
hand them the results.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from rigcheck.engine.store.errors import StoreError
from rigcheck.engine.store.folders import FolderRefused, check_folders


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _is_ours(info: os.stat_result) -> bool:
    """Whether this process's user owns the file (tests replace this to play another user)."""
    return info.st_uid == os.geteuid()


def check_own_path(path: Path, what: str, folder: bool = False) -> None:
    """Refuse a store, journal or log folder that a link in a folder anyone can write leads to, that is not
    a plain file (or folder), or that another user owns: using it would let them choose where we write. A
    missing path passes: we make it ourselves."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        if os.stat(path.parent).st_mode & stat.S_IWOTH:
            raise StoreError(
                f"{what} {path} is a symbolic link in {path.parent}, a folder anyone can write; "
                "it was not followed: use a path in a folder of your own"
            )
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise StoreError(f"{what} {path} is a symbolic link to nothing; remove it or use another path") from None
    if folder and not stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{what} {path} is not a folder; move it aside or use another store")
    if not folder and stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{what} {path} is a folder, not a rigcheck store")
    if not folder and not stat.S_ISREG(info.st_mode):
        raise StoreError(f"{what} {path} is not a regular file; use another store")
    if not _is_ours(info):
        raise StoreError(
            f"{what} {path} belongs to {_owner_name(info.st_uid)}, not to you; "
            "it was left as it is: use a store of your own (--store)"
        )


def check_folders_of(path: Path, what: str) -> None:
    """Refuse `path` when a folder on the way to it may be changed by another user (folders.py)."""
    try:
        check_folders(path.parent)
    except FolderRefused as refused:
        raise StoreError(f"{what} {path}: {refused}") from None


def check_store_paths(path: Path, log_root: Path) -> None:
    check_folders_of(path, "store")
    check_own_path(path, "store")
    for suffix in ("-wal", "-shm", "-journal"):  # SQLite writes these beside the store
        check_own_path(path.with_name(path.name + suffix), "store journal")
    check_own_path(log_root, "log folder", folder=True)


def make_private_folder(path: Path) -> None:
    """Make the folder readable by its owner only, or check that the one already there may be used."""
    check_folders_of(path, "log folder")
    check_own_path(path, "log folder", folder=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        check_own_path(path, "log folder", folder=True)  # made meanwhile: check it again, leave its mode
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)  # the folder we made, not a swapped-in link
    try:
        os.fchmod(fd, 0o700)  # whatever the umask
    finally:
        os.close(fd)
