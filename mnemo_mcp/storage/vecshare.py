"""The vector index's arrays shared by the processes of one machine, through a file.

Every server (Claude Code starts one per session) held its own float32 copy of every stored
vector: 15 MB at 10k memories, 150 MB at 100k, the same numbers in each process. Now a process
that loads the index from the database (vectors.VectorIndex._reload) writes what it loaded to a
snapshot beside the database (`<db>.vectors/`) and maps it copy-on-write; a process that loads
later maps the newest snapshot it may use and applies the changes made since from the database's
change log, as it does after any other process's write. The kernel keeps one copy of the
snapshot's pages for all of them; a row a process changes afterwards (a memory written since)
becomes a private copy of that page only.

A snapshot is a cache of what the database holds, at one point of its change log: losing it
costs one load. It is written to a temporary name and renamed, so a reader sees a whole file or
none; older snapshots are removed when a newer one is written (a process that maps one keeps its
pages until it lets go). It names the database file's device and inode, so a restored backup
(another file at the same path) never uses the snapshot of the file it replaced. Its rows have
room for new memories (a half again); a process whose new rows no longer fit loads again and
writes a new snapshot.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

SHARE_FROM = 2_000  # memories from which a snapshot is written (below, a private copy costs < 3 MB)
SUFFIX = ".vectors"
MAGIC = b"MNEMOVEC1\n"
ALIGN = 4096  # each array on a page of its own, so the matrix maps on page boundaries
ROOM = 0.5  # spare rows, as a share of the rows loaded
MIN_ROOM = 256
WRITE_ROWS = 8192
KEEP_FREE = 64 * 2**20  # a cache never takes the last of a disk the database needs


def folder_of(db_path: str) -> str:
    return os.path.realpath(db_path) + SUFFIX


def _name(key: str, seq: int) -> str:
    return f"{key}-{seq:015d}.vec"


def _names_of(key: str) -> re.Pattern[str]:
    """What `_name` gives for `key`, with the change-log entry as group 1."""
    return re.compile(re.escape(key) + r"-(\d{15})\.vec")


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def key_of(identity: tuple[int, int] | None, dim: int) -> str | None:
    return None if identity is None else f"{identity[0]}-{identity[1]}-{dim}"


def capacity_for(n: int) -> int:
    return n + max(MIN_ROOM, int(n * ROOM))


def newest(folder: str, key: str, at_most: int) -> tuple[int, str] | None:
    """(seq, path) of the newest snapshot of `key` taken at or before change `at_most`."""
    pattern = _names_of(key)
    best: tuple[int, str] | None = None
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        m = pattern.fullmatch(name)
        if m and int(m.group(1)) <= at_most and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), os.path.join(folder, name))
    return best


def write(
    folder: str, key: str, seq: int, arrays: dict[str, np.ndarray], extra: dict[str, Any], rows: int
) -> str | None:
    """Write the arrays as the snapshot at `seq`, each as `rows` long (the rows past an array's
    own length read as zeros); older snapshots of `key` are removed. None when the folder cannot
    be written (then nothing is shared)."""
    import numpy as np

    header: dict[str, Any] = {"seq": seq, **extra, "arrays": {}}
    offset = 0
    for name, arr in arrays.items():
        header["arrays"][name] = [arr.dtype.str, offset, [rows, *arr.shape[1:]]]
        offset += _aligned(arr.itemsize * rows * int(np.prod(arr.shape[1:], dtype=np.int64)))
    head = json.dumps(header).encode()
    start = _aligned(len(MAGIC) + 8 + len(head))
    path = os.path.join(folder, _name(key, seq))
    if os.path.exists(path):  # another process loaded the same changes meanwhile: share its file
        return path
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if shutil.disk_usage(folder).free < start + offset + KEEP_FREE:
            log.info("vector snapshot not written: the disk holding %s is nearly full", folder)
            return None
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + len(head).to_bytes(8, "little") + head)
            for name, arr in arrays.items():
                f.seek(start + header["arrays"][name][1])
                for at in range(0, len(arr), WRITE_ROWS):  # a block at a time: no copy of the whole
                    f.write(np.ascontiguousarray(arr[at : at + WRITE_ROWS]).tobytes())
            f.truncate(start + offset)
        _publish(tmp, path)
    except OSError as err:
        log.debug("vector snapshot not written to %s: %s", folder, err)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    _remove_stale(folder, key, seq)
    return path


def _publish(tmp: str, path: str) -> None:
    """Give the written file its name, unless another process that loaded the same changes at
    the same time got there first: then everyone maps that one (a rename would replace it, and
    the processes that mapped it would share nothing with the ones that map this)."""
    try:
        os.link(tmp, path)  # fails when the name exists, where a rename would replace
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _remove_stale(folder: str, key: str, seq: int) -> None:
    """Remove the snapshots no process will load again: older ones of this file, those of a file
    this one replaced (a restored backup) or of another model, and temporary files whose writer
    has died."""
    current = _names_of(key)
    other = re.compile(r"[\d-]+-\d{15}\.vec")
    temporary = re.compile(r"[\d-]+-\d{15}\.vec\.(\d+)\.tmp")
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            mine, tmp = current.fullmatch(name), temporary.fullmatch(name)
            if mine:
                stale = int(mine.group(1)) < seq
            elif tmp:
                stale = not _alive(int(tmp.group(1)))
            else:
                stale = other.fullmatch(name) is not None
            if stale:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def read(path: str, mapped: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """(header, arrays) of a snapshot: the `mapped` arrays mapped copy-on-write (shared pages
    until written), the others read into memory. None when it is gone or not whole."""
    import numpy as np

    try:
        with open(path, "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
            start = _aligned(len(MAGIC) + 8 + size)
            out: dict[str, np.ndarray] = {}
            for name, (dtype, offset, shape) in header["arrays"].items():
                count = int(np.prod(shape))
                if name in mapped:
                    out[name] = np.memmap(f, dtype=dtype, mode="c", offset=start + offset, shape=tuple(shape))
                else:
                    f.seek(start + offset)
                    out[name] = np.fromfile(f, dtype=dtype, count=count).reshape(shape)
                    if out[name].size != count:
                        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.debug("vector snapshot %s not usable: %s", path, err)
        return None
    header["path"], header["start"] = path, start
    return header, out


def view(header: dict[str, Any], name: str) -> np.ndarray | None:
    """Array `name` of a snapshot read-only, as its file holds it (pages shared with every process
    that maps it); None when the file is gone."""
    import numpy as np

    dtype, offset, shape = header["arrays"][name]
    try:
        return np.memmap(header["path"], dtype=dtype, mode="r", offset=header["start"] + offset, shape=tuple(shape))
    except (OSError, ValueError) as err:
        log.debug("vector snapshot %s: no view of %s: %s", header["path"], name, err)
        return None


def overwrite_rows(header: dict[str, Any], name: str, rows: dict[int, bytes]) -> None:
    """Write these rows of array `name` into the snapshot's file itself: a memory deleted since
    leaves no copy of its vector there (the database zeroes freed pages: secure_delete), and a
    changed vector replaces the old. The processes that map the file see the new bytes in the
    pages they have not written to (the next sync tells them what changed anyway)."""
    _dtype, offset, shape = header["arrays"][name]
    width = len(next(iter(rows.values()))) if rows else 0
    try:
        with open(header["path"], "r+b") as f:  # not os.pwrite: Windows has none
            for row, data in rows.items():
                if 0 <= row < shape[0]:
                    f.seek(header["start"] + offset + row * width)
                    f.write(data)
    except OSError as err:  # replaced by a newer snapshot meanwhile and removed, say
        log.debug("vector snapshot %s: rows not overwritten: %s", header["path"], err)
