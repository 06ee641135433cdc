"""JudgeAcc: an LLM judge's verdict on each answer — the paper's auxiliary accuracy, never a primary score.

``lens bench judge RUN_DIR…`` asks a judge, per scored row of a run, whether the prediction means the same as the
gold answer for the question (``harness/prompts/judge.md``; one JSON reply ``{"correct": true|false}``). The
judge is configured on its own (the usual ``--preset/--config/--set/--base-url/--model`` flags of this command;
by default the same embedded model as the systems) and runs after the systems, so its calls are never in a
system's budget or cost. Each verdict is appended to ``RUN_DIR/judge.jsonl`` with the judge's raw reply, its
model, the prompt's sha256 and its tokens; a rerun skips every row already judged under the same key (system
hash, question, prediction, gold, judge model, prompt), so verdicts are resumable and cached: a judged row costs
nothing again. A judge failure (no reply, unparsable reply) is recorded as a verdict of ``null`` with the error:
the row's EM is untouched and JudgeAcc counts it as missing. Judging an empty prediction is not asked: it is
incorrect without a call.

``lens bench report`` reads ``judge.jsonl`` when present: JudgeAcc beside EM per system on the table's questions,
the agreement of the two (Cohen's κ over the questions both scored), and how many verdicts are missing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from pydantic import BaseModel

from harness.bench.run_store import RowLog, read_row_file, read_rows
from harness.files import canonical_json, sha256_bytes
from lens import LLMError
from lens.parts import render

__all__ = ["JUDGE_FORMAT", "JudgeReply", "JudgeSummary", "judge_messages", "judge_runs", "load_verdicts", "cohen_kappa"]

JUDGE_FORMAT = "lens-judge-row/1"
JUDGE_FILE = "judge.jsonl"
JUDGE_MAX_TOKENS = 16


class JudgeReply(BaseModel):
    correct: bool


def judge_messages(question: str, gold: str, prediction: str) -> list[dict[str, str]]:
    return render("judge", package="harness.prompts", question=question, gold=gold, prediction=prediction)


def _prompt_sha256() -> str:
    return sha256_bytes((resources.files("harness.prompts") / "judge.md").read_bytes())


def _key(row: dict[str, Any], model: str, prompt: str) -> str:
    return sha256_bytes(
        canonical_json(
            [
                row["system_hash"],
                row["question_id"],
                row["prediction"]["answer"] or "",
                row["gold_answer"],
                model,
                prompt,
            ]
        )
    )


@dataclass
class JudgeSummary:
    judged: int  # verdicts written now
    cached: int  # rows already judged under the same key
    failed: int  # verdicts of null written now (judge errors)
    tokens: int  # the judge's tokens now (never a system's)


def judge_runs(run_dirs: Sequence[str | os.PathLike[str]], client: Any, *, limit: int | None = None) -> JudgeSummary:
    """Judge every row of the runs not yet judged under the same key (see the module docstring)."""
    prompt = _prompt_sha256()
    model = client.model
    summary = JudgeSummary(0, 0, 0, 0)
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        log = RowLog(run_dir / JUDGE_FILE, JUDGE_FORMAT)
        done = {v["key"] for v in log.recover(None)[0]}  # a verdict a kill interrupted is cut and asked again
        rows = sorted(read_rows(run_dir), key=lambda r: (r["position"], r["system"]))
        with log:
            for row in rows[:limit] if limit else rows:
                key = _key(row, model, prompt)
                if key in done:
                    summary.cached += 1
                    continue
                answer = row["prediction"]["answer"] or ""
                verdict, raw, error, tokens = None, None, None, 0
                t0 = time.monotonic()
                if not answer.strip():
                    verdict = False  # nothing to grade: incorrect, no call
                else:
                    try:
                        resp = client.chat_json(
                            judge_messages(row["question"], row["gold_answer"], answer),
                            JudgeReply,
                            max_tokens=JUDGE_MAX_TOKENS,
                            temperature=0.0,
                        )
                        verdict, raw, tokens = bool(resp.parsed.correct), resp.text, resp.tokens
                    except LLMError as exc:
                        error = str(exc)[:300]
                        summary.failed += 1
                log.append(
                    {
                        "format": JUDGE_FORMAT,
                        "key": key,
                        "system": row["system"],
                        "system_hash": row["system_hash"],
                        "question_id": row["question_id"],
                        "verdict": verdict,
                        "raw": raw,
                        "error": error,
                        "model": model,
                        "prompt_sha256": prompt,
                        "tokens": tokens,
                        "seconds": round(time.monotonic() - t0, 3),
                    }
                )
                done.add(key)
                summary.judged += 1
                summary.tokens += tokens
    return summary


def load_verdicts(run_dirs: Iterable[str | os.PathLike[str]]) -> dict[tuple[str, str], bool | None]:
    """(system_hash, question id) → the latest verdict (None: the judge failed), over the runs' judge files.
    Read-only: a torn last line is ignored here."""
    out: dict[tuple[str, str], bool | None] = {}
    for run_dir in run_dirs:
        for v in read_row_file(Path(run_dir) / JUDGE_FILE, JUDGE_FORMAT):
            out[(v["system_hash"], v["question_id"])] = v["verdict"]
    return out


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's κ of two binary ratings of the same items; None when undefined (no items, or chance agreement 1)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    return None if pe >= 1 else (po - pe) / (1 - pe)
