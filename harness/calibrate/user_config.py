"""The reading model's table in a user's TOML config: ``[loop.reading_model."<model>"]``, edited as TOML.

The file is parsed and written back by a round-tripping TOML library (tomlkit), so everything else in it — comments,
layout, how its tables are spelt (``[loop.reading_model.'m']``, dotted keys, inline tables) — stays as the user
wrote it; only the model's keys change (a table the file holds is updated in place, its comments kept). The text
to write is parsed back (tomllib) and must hold exactly the old values with the model's table replaced, else
nothing is written. The write is all-or-nothing and goes through a symbolic link to its target (a dotfiles
config stays a link), keeping the target's permission bits (a 0600 file holding credentials stays private); a
file that cannot be written (read-only file system, no permission) is one error naming it, the file unchanged.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from lens import LensError
from lens.parts import atomic_write

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli is the same parser, before it joined the stdlib
    import tomli as tomllib

__all__ = ["reading_model_toml", "check_config_target", "write_reading_model"]


def reading_model_toml(model: str, values: Mapping[str, Any]) -> str:
    """The table ``[loop.reading_model."<model>"]`` holding ``values`` as TOML text (the model name quoted and
    escaped as TOML requires; ``None`` values left out)."""
    return tomlkit.dumps({"loop": {"reading_model": {model: _table(values)}}}).rstrip("\n")


def check_config_target(path: str | os.PathLike[str]) -> Path:
    """The file a reading model would be written to (``path``'s target when it is a symbolic link), checked
    before any work: an existing file must be readable TOML, and its folder writable. Raises ``LensError`` naming
    the file."""
    real = Path(os.path.realpath(path))
    if real.exists():
        _read(path, real)
    folder = real.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK):  # a read-only file system says so here, even to root
        raise LensError(f"{path}: cannot write the config ({folder} is not writable)")
    return real


def write_reading_model(path: str | os.PathLike[str], model: str, values: Mapping[str, Any]) -> Path:
    """Put the table ``[loop.reading_model."<model>"]`` holding ``values`` into the TOML file ``path`` (created if
    missing), replacing that model's table if the file has one and keeping everything else (module docstring).
    Returns the file written (the link's target for a link). Raises ``LensError`` naming the file when it is not
    valid TOML, the edit would not read back as intended, or it cannot be written; the file is then unchanged."""
    real = Path(os.path.realpath(path))
    old_text = _read(path, real) if real.exists() else ""
    expected = tomllib.loads(old_text)
    table = {k: v for k, v in values.items() if v is not None}
    try:
        doc = tomlkit.parse(old_text)
        _put(doc, model, table)
        text = tomlkit.dumps(doc).rstrip("\n") + "\n"
    except (TOMLKitError, TypeError, ValueError, KeyError) as exc:
        raise LensError(
            f"{path}: cannot add the table of {model!r} to this TOML ({exc}); the file is unchanged"
        ) from None
    expected.setdefault("loop", {}).setdefault("reading_model", {})[model] = table
    try:
        same = _canonical(tomllib.loads(text)) == _canonical(expected)
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise LensError(
            f"{path}: the edited config would not read back as written; the file is unchanged — add this table "
            f"by hand:\n{reading_model_toml(model, table)}"
        )
    mode = stat.S_IMODE(real.stat().st_mode) if real.exists() else None
    try:
        atomic_write(real, text.encode("utf-8"), mode=mode)
    except OSError as exc:
        where = f"{path} (→ {real})" if os.path.islink(path) else str(path)
        raise LensError(f"{where}: cannot write the config ({exc.strerror or exc}); the file is unchanged") from None
    return real


def _read(path: str | os.PathLike[str], real: Path) -> str:
    try:
        text = real.read_text(encoding="utf-8")
        tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise LensError(f"{path}: cannot read the config ({getattr(exc, 'strerror', None) or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise LensError(f"{path}: not valid TOML ({exc}); fix it before a reading model is written to it") from None
    return text


def _table(values: Mapping[str, Any]) -> Any:
    t = tomlkit.table()
    for key, value in values.items():
        if value is not None:
            t[key] = value
    return t


def _put(doc: Any, model: str, table: Mapping[str, Any]) -> None:
    """Set ``doc.loop.reading_model[model]`` to ``table``: an existing table is updated key by key (its comments
    stay), any other value replaced; missing parent tables are created."""
    node = doc
    for name in ("loop", "reading_model"):
        if name not in node:
            node[name] = {}
        node = node[name]
        if not isinstance(node, MutableMapping):
            raise ValueError(f"{name!r} is not a table")
    old = node.get(model)
    if isinstance(old, MutableMapping):
        for key in [k for k in old if k not in table]:
            del old[key]
        for key, value in table.items():
            old[key] = value
    else:
        if old is not None:
            del node[model]
        new = _table(table)
        new.add(tomlkit.nl())  # a blank line before whatever table follows
        node[model] = new


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, default=str)
