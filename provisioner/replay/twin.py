"""One replay on two processes (`replay --workers 2` with one trace): a twin forked at the start
replays the same events in step, and each pass's single-node consolidation simulations are
split between the two (provisioner.disruption.share: every other candidate each, then the
earliest command of both). Everything else both do: a replay is deterministic, so the twin
stays in step without being told anything but the other half's answer.

The answer never depends on the twin. Each message carries the pass's number and a checksum of
its candidates' names; a twin that is gone, a closed pipe or a message out of step parts them
for good, and the parent simulates every candidate itself from then on. The twin writes
nothing: it leaves with os._exit when the replay ends, fails, or is parted from, and the kernel
ends it with its parent (Linux; elsewhere a parent that is gone closes the pipe the twin reads).
"""
from __future__ import annotations

import ctypes
import os
import select
import signal
import struct
import sys
import zlib

from ..disruption.share import Apart

# Replays shorter than this are not given a twin: 6 and 12 simulated hours of the benchmark took
# as long or longer with one (the fork, and few candidates per pass at night), a day 25 % less
# wall time and a week 30 % less (BENCHMARKS.md).
TWIN_FROM_S = 86400.0
_MESSAGE = struct.Struct("<qqq")  # (pass number, checksum of the candidates' names, first index or -1)
_POLL_S = 0.5  # how often a waiting parent checks that its twin is alive


class Twin:
    """This process's end of a replay shared with a twin (rank 0: the parent, 1: the twin)."""

    def __init__(self, rank: int, read: int, write: int, pid: int | None) -> None:
        self.rank, self.read, self.write, self.pid = rank, read, write, pid
        self.passes = 0
        self.alive = True
        self.why = ""  # why they parted, if they did

    @classmethod
    def fork(cls) -> Twin | None:
        """Fork the twin; None where processes cannot be forked."""
        if not hasattr(os, "fork"):
            return None
        down, up = os.pipe(), os.pipe()  # parent -> twin, twin -> parent
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _die_with(parent)
            os.close(down[1])
            os.close(up[0])
            return cls(1, down[0], up[1], None)
        os.close(down[0])
        os.close(up[1])
        return cls(0, up[0], down[1], pid)

    def mine(self, index: int) -> bool:
        return not self.alive or index % 2 == self.rank

    def agree(self, names: tuple[str, ...], first: int | None) -> int | None:
        if not self.alive:
            return first  # `mine` was every candidate: this process's first is the pass's
        self.passes += 1
        checksum = zlib.crc32("\0".join(names).encode())
        try:
            os.write(self.write, _MESSAGE.pack(self.passes, checksum, -1 if first is None else first))
            theirs = self._receive()
        except OSError as e:  # a closed pipe (the other end is gone)
            self.apart(f"the pipe to the twin failed: {e}")
            raise Apart(self.why) from None
        if theirs is None or theirs[0] != self.passes or theirs[1] != checksum:
            self.apart("the twin is gone" if theirs is None else f"the twin is out of step at pass {self.passes}")
            raise Apart(self.why)
        found = [i for i in (first, theirs[2]) if i is not None and i >= 0]
        return min(found) if found else None

    def apart(self, why: str) -> None:
        if self.rank == 1:
            os._exit(0)  # the twin has no work alone; the parent carries on
        if self.alive:
            self.alive, self.why = False, why
            self.close()

    def _receive(self) -> tuple[int, int, int] | None:
        data = b""
        while len(data) < _MESSAGE.size:
            if self.pid is not None:  # the parent waits only while its twin lives
                ready, _, _ = select.select([self.read], [], [], _POLL_S)
                if not ready:
                    if os.waitpid(self.pid, os.WNOHANG)[0]:
                        self.pid = None  # reaped
                        return None
                    continue
            chunk = os.read(self.read, _MESSAGE.size - len(data))
            if not chunk:
                return None  # end of file: the other end is gone
            data += chunk
        return _MESSAGE.unpack(data)

    def close(self) -> None:
        """The parent's end: close the pipes and end and reap the twin."""
        for fd in (self.read, self.write):
            try:
                os.close(fd)
            except OSError:
                pass
        self.read = self.write = -1
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)  # its work is done or of no use: do not wait for it
                os.waitpid(self.pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass
            self.pid = None


def _die_with(parent: int) -> None:
    """Have the kernel end the twin when its parent ends (Linux PR_SET_PDEATHSIG), so a parent
    killed mid-replay leaves no twin running on; elsewhere the twin leaves at its next exchange."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(0)


__all__ = ["TWIN_FROM_S", "Twin"]
