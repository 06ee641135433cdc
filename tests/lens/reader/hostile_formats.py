"""Format readers that misbehave the ways a C parser can on a hostile file, registered in the table by the tests;
importable by name, since the extraction workers import a format's module themselves."""

from __future__ import annotations

import ctypes
import os
import time

from lens.reader.formats import Limits, Unit


def echo(data: bytes, name: str, limits: Limits) -> list[Unit]:
    """A well-behaved reader: the file's text as one unit."""
    return [Unit(data.decode(), name, {"line": 1})]


def exit_abruptly(data: bytes, name: str, limits: Limits) -> list[Unit]:
    os._exit(3)


def segfault(data: bytes, name: str, limits: Limits) -> list[Unit]:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return []


def hang(data: bytes, name: str, limits: Limits) -> list[Unit]:
    time.sleep(600)
    return []


def hog(data: bytes, name: str, limits: Limits) -> list[Unit]:
    """Asks for as many bytes as the file says at once (a MemoryError under the worker's cap)."""
    return [Unit(str(len(bytearray(int(data)))), name, {"line": 1})]


def broken(data: bytes, name: str, limits: Limits) -> list[Unit]:
    """Fails the way a parser does on malformed input."""
    raise KeyError("word/document.xml")
