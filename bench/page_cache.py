#!/usr/bin/python3
"""Evict a file from the page cache, or print how many of its bytes are resident.

Why: bench/cold_lint.sh measures what a cold lint reads from disk, as the file's page-cache
residency after the run; dd, vmtouch and root-only /proc/sys/vm/drop_caches are not needed.

  page_cache.py evict FILE      posix_fadvise(POSIX_FADV_DONTNEED) over the whole file (after
                                fdatasync, so no dirty page stays); clean, unmapped pages go
  page_cache.py resident FILE   resident bytes, from mincore(2) over a read-only mapping
"""
import ctypes
import mmap
import os
import sys

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_MAP_FAILED = ctypes.c_void_p(-1).value


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def resident(path):
    size = os.path.getsize(path)
    if size == 0:
        return 0
    page = mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        # Mapping reads nothing; mincore reports the page cache's state for it. libc's mmap,
        # because Python's mmap object does not give the address of a read-only mapping.
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == _MAP_FAILED:
            raise OSError(ctypes.get_errno(), "mmap failed")
        try:
            vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
            if _libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed")
            return sum(v & 1 for v in vec) * page
        finally:
            _libc.munmap(ctypes.c_void_p(addr), size)
    finally:
        os.close(fd)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("evict", "resident"):
        sys.exit(__doc__)
    if sys.argv[1] == "evict":
        evict(sys.argv[2])
    else:
        print(resident(sys.argv[2]))


if __name__ == "__main__":
    main()
