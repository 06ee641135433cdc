"""The walk of a question through Agent.ask (modules entered, in order) and the demo questions' answers, both
with same_rows.py's scripted endpoint.
Usage: PYTHONPATH=REPO python benchmarks/results/refactor/walk.py REPO

A module is named by its path under lens/ (``loop/_loop.py``: two ``_run.py`` in two stages stay two), and each
walk is summarised twice: by module and by room (a sub-package such as ``loop/``, or a top-level module, as
rooms.py counts them). A stop is an entry into a module (or room) other than the one just left; a return is a
stop at one already visited. Two walks: the stage walk (calls within two frames of Agent.ask) and the question
walk (every lens function handed the question, or an object holding it)."""

import importlib.util
import json
import os
import re
import sys

repo = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "same_rows", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "same_rows.py")
)
sr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sr)
ep = sr.Endpoint()
import lens  # noqa: E402

assert lens.__file__.startswith(repo), lens.__file__
from lens import Agent, load_config  # noqa: E402

cfg = load_config(
    "deep", overrides={"llm": {"base_url": ep.base_url, "model": "scripted", "cache": False, "max_retries": 0}}
)
qs = [
    line.split("|")[2].strip() for line in open(f"{repo}/corpora/demo/QUESTIONS.md") if re.match(r"^\| [BCL]\d ", line)
]


def carries(v, q):
    if isinstance(v, str):
        return v == q
    for attr in ("question",):
        if getattr(v, attr, None) == q:
            return True
    st = getattr(v, "state", None)
    return st is not None and getattr(st, "question", None) == q


walk = []
stage_walk = []
ASK = [None]


def depth(frame):
    d = 0
    while frame is not None:
        d += 1
        frame = frame.f_back
    return d


def prof(frame, event, arg):
    if event != "call":
        return
    f = frame.f_code.co_filename
    if "/lens/" not in f or not f.startswith(repo):
        return
    if frame.f_code.co_name == "ask" and f.endswith("_agent.py") and ASK[0] is None:
        ASK[0] = depth(frame)
    mod = os.path.relpath(f, os.path.join(repo, "lens"))
    if ASK[0] is not None and depth(frame) <= ASK[0] + 2:
        if not stage_walk or stage_walk[-1] != mod:
            stage_walk.append(mod)
    q = QUESTION
    if any(carries(v, q) for k, v in list(frame.f_locals.items())):
        if not walk or walk[-1] != mod:
            walk.append(mod)


answers = {}
for i, q in enumerate(qs):
    QUESTION = q
    agent = Agent(cfg)
    if i == 0:
        sys.setprofile(prof)
    r = agent.ask(q, f"{repo}/corpora/demo")
    sys.setprofile(None)
    answers[q] = {
        "answer": r.answer,
        "stop": r.stop_reason,
        "calls": r.cost["oracle_calls"] if isinstance(r.cost, dict) else r.cost.oracle_calls,
        "verified": r.answer_verified,
    }


def room(module):
    """``loop/_loop.py`` -> ``loop/``; a top-level module is its own room."""
    return module.split("/")[0] + "/" if "/" in module else module.removesuffix(".py")


def summary(name, w, unit="module"):
    seen, returns = set(), 0
    for m in w:
        if m in seen:
            returns += 1
        seen.add(m)
    print(f"{name}: {' > '.join(w)}")
    print(
        f"  stops {len(w)}, {unit}s visited {len(seen)}, returns to a {unit} already left {returns}, "
        f"entries per {unit}",
        {m: w.count(m) for m in sorted(seen)},
    )


def by_room(w):
    out = []
    for m in w:
        if not out or out[-1] != room(m):
            out.append(room(m))
    return out


summary("stage walk (calls within two frames of Agent.ask)", stage_walk)
summary("  by room", by_room(stage_walk), "room")
summary("question walk (every lens function handed the question)", walk)
summary("  by room", by_room(walk), "room")
print(json.dumps(answers, indent=0, sort_keys=True))
