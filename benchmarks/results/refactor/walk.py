"""The walk of a question through Agent.ask (modules entered, in order) and the demo questions' answers, both
with same_rows.py's scripted endpoint.
Usage: PYTHONPATH=REPO python benchmarks/results/refactor/walk.py REPO"""

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
    if ASK[0] is not None and depth(frame) <= ASK[0] + 2:
        mod = os.path.basename(f)
        if not stage_walk or stage_walk[-1] != mod:
            stage_walk.append(mod)
    q = QUESTION
    if any(carries(v, q) for k, v in list(frame.f_locals.items())):
        mod = os.path.basename(f)
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
        "calls": r.cost["oracle_calls"],
        "verified": r.answer_verified,
    }


def summary(name, w):
    seen, returns = set(), 0
    for m in w:
        if m in seen:
            returns += 1
        seen.add(m)
    print(f"{name}: {' > '.join(w)}")
    print(
        f"  modules visited {len(seen)}, returns to a module already left {returns}, entries per module",
        {m: w.count(m) for m in sorted(seen)},
    )


summary("stage walk (calls within two frames of Agent.ask)", stage_walk)
summary("question walk (every lens function handed the question)", walk)
print(json.dumps(answers, indent=0, sort_keys=True))
