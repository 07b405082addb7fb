"""Byte ranges of segment files that the server sends without copying (sendfile)."""
from __future__ import annotations

import os


class SegmentFile:
    """An open segment file descriptor. Closed explicitly (log close) or when the last
    reference goes away, so a segment deleted by retention while a fetch still holds a
    region of it stays readable: the unlinked inode lives until its fd is closed."""

    __slots__ = ("fd", "path", "__weakref__")

    def __init__(self, path: str, flags: int = os.O_RDONLY, mode: int = 0o644):
        self.path = path
        self.fd = -1
        self.fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)

    def fileno(self) -> int:
        if self.fd < 0:
            raise ValueError(f"I/O on closed segment file {self.path}")
        return self.fd

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def pread(self, length: int, position: int) -> bytes:
        return os.pread(self.fileno(), length, position)

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"SegmentFile({self.path!r}, fd={self.fd})"


class FileRegion:
    """``length`` bytes of ``file`` from ``position``: send with os.sendfile(sock, file.fileno(),
    position, length), or take ``bytes(region)`` (one os.pread)."""

    __slots__ = ("file", "position", "length")

    def __init__(self, file, position: int, length: int):
        self.file = file
        self.position = position
        self.length = length

    def fileno(self) -> int:
        f = self.file
        return f if isinstance(f, int) else f.fileno()

    def __len__(self) -> int:
        return self.length

    def __bytes__(self) -> bytes:
        fd = self.fileno()
        out = os.pread(fd, self.length, self.position)
        if len(out) < self.length:  # pread of a regular file is short only at EOF
            parts = [out]
            got = len(out)
            while got < self.length:
                more = os.pread(fd, self.length - got, self.position + got)
                if not more:
                    raise EOFError(
                        f"region {self.position}+{self.length} of {self.file!r}: file ends at "
                        f"{self.position + got}"
                    )
                parts.append(more)
                got += len(more)
            out = b"".join(parts)
        return out

    def __repr__(self) -> str:
        return f"FileRegion({self.file!r}, position={self.position}, length={self.length})"
