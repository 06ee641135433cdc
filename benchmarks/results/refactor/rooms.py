"""The rooms of lens/ and the import arrows between and within them, read from the source (an AST walk).

    python benchmarks/results/refactor/rooms.py REPO [--as LATER_REPO]

A room is a top-level module of lens/ (``_config.py``, ``parts.py``, ``__init__.py``) or a sub-package
(``reader/``, its sub-packages included). An arrow is one module importing another lens module: every import
statement counts, at the top of a module or inside a function, ``from lens import X`` resolved to the module
``lens`` (its ``__init__``). Printed: the modules and module arrows in all; the rooms and the arrows between
rooms (distinct room pairs); per room its modules, its arrows within (distinct module pairs inside it), the rooms
it imports and the rooms importing it; and the cycles among modules (Tarjan's strongly connected components of
more than one module, or a module importing itself).

``--as LATER_REPO``: REPO's modules grouped into the rooms LATER_REPO has, each by its file name (a module of
REPO whose file name is not in LATER_REPO stays a room of its own): the same arrows, counted per stage.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path


def modules(lens: Path) -> dict[str, Path]:
    out = {}
    for p in sorted(lens.rglob("*.py")):
        parts = list(p.relative_to(lens.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def arrows(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of a lens module by a lens module."""
    out = set()
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importer's package
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                # `from pkg import sub` imports the module pkg.sub when there is one, else a name of pkg
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:  # `import lens.reader._corpus.x` → the module it names
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != name:
                    out.add((name, t))
    return out


def room_name(module: str) -> str:
    """``lens.loop._loop`` -> ``loop/``; ``lens._config`` -> ``_config``; ``lens`` -> ``__init__``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1] + "/" if len(parts) > 2 or not parts[1].startswith("_") and parts[1] != "parts" else parts[1]


def cycles(mods: dict[str, Path], edges: set[tuple[str, str]]) -> list[list[str]]:
    graph = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:  # recursive Tarjan; lens is a few dozen modules deep at most
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(mods):
        if v not in index:
            visit(v)
    return found


def main(repo: str, later: str | None = None) -> None:
    lens = Path(repo) / "lens"
    mods = modules(lens)
    edges = arrows(mods)
    later_rooms = {}  # --as: file name -> its room in the later tree (__init__.py is every package's)
    if later:
        later_rooms = {p.name: room_name(m) for m, p in modules(Path(later) / "lens").items()}
        later_rooms.pop("__init__.py", None)
        print(f"grouped into the rooms of {later}")

    def room(m: str) -> str:
        return later_rooms.get(mods[m].name, room_name(m))

    rooms: dict[str, list[str]] = defaultdict(list)
    for m in mods:
        rooms[room(m)].append(m)
    between = {(room(a), room(b)) for a, b in edges if room(a) != room(b)}
    within = defaultdict(set)
    for a, b in edges:
        if room(a) == room(b):
            within[room(a)].add((a, b))
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in mods.values())
    print(f"{repo}: {len(mods)} modules ({lines} lines), {len(edges)} arrows between lens modules")
    print(
        f"{len(rooms)} rooms, {len(between)} arrows between rooms, "
        f"{sum(len(w) for w in within.values())} arrows within rooms"
    )
    print(f"cycles among modules: {len(cycles(mods, edges))}")
    print()
    print("| room | modules | arrows within | imports (rooms) | imported by (rooms) |")
    print("| --- | ---: | ---: | --- | --- |")
    for r in sorted(rooms, key=lambda r: (not r.endswith("/"), r)):
        out = sorted(b for a, b in between if a == r)
        into = sorted(a for a, b in between if b == r)
        print(f"| {r} | {len(rooms[r])} | {len(within[r])} | {' '.join(out)} | {' '.join(into)} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--as" else None)
