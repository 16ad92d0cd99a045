"""Loads and stores of the ring and control words in memory another process reads at the same time
(RINGS.md). struct.pack_into zeroes its field before it writes it, so a concurrent reader can see a
transient 0: a request ring's head read as 0 is a head behind its tail, and the daemon fences the
guest for a broken ring. A ctypes word is one aligned 8- or 4-byte access, as the C guest's stores
are."""
from __future__ import annotations

import ctypes


def load64(m, off: int) -> int:
    return ctypes.c_uint64.from_buffer(m, off).value


def store64(m, off: int, v: int):
    ctypes.c_uint64.from_buffer(m, off).value = v


def load32(m, off: int) -> int:
    return ctypes.c_uint32.from_buffer(m, off).value


def store32(m, off: int, v: int):
    ctypes.c_uint32.from_buffer(m, off).value = v
