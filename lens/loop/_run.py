"""What one question carries from stage to stage: the question, its meter and budget, stage records and notes."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from lens._config import LLMSettings
from lens._progress import Progress, ProgressCallback
from lens.llm._cost import CostMeter
from lens.llm._llm import LLMClient
from lens.loop._budget import Budget
from lens.loop._oracle import budgeted_call

__all__ = ["QuestionRun"]

log = logging.getLogger("lens.agent")


@dataclass
class QuestionRun:
    """One ``ask`` call's state outside the loop; ``client`` opens the LLM client on first use."""

    question: str
    started: float
    meter: CostMeter
    budget: Budget  # over ``meter``
    llm: LLMSettings
    client: Callable[[], LLMClient]
    stages: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    progress: ProgressCallback | None = None
    # what the search knows so far, for the watcher (the loop's ``progress_detail``, set once the loop exists)
    detail: Callable[[], dict] | None = None

    def report(self, stage: str) -> None:
        """Tell the watcher (if any) that ``stage`` starts, with the cost so far and the search's detail; a failing
        watcher (or detail) is logged."""
        if self.progress is None:
            return
        cost = self.meter.cost
        try:
            snapshot = Progress(
                stage=stage,
                round=self.budget.rounds,
                max_rounds=self.budget.settings.max_rounds,
                oracle_calls=cost.oracle_calls,
                tokens=cost.tokens,
                elapsed_s=round(time.monotonic() - self.started, 3),
                detail=self.detail() if self.detail is not None else None,
            )
            self.progress(snapshot)
        except Exception:  # a watcher never breaks the question it watches
            log.exception("progress callback failed at stage %s", stage)

    def fixed_call(self, messages: list[dict[str, str]], schema: Any, max_tokens: int, *, keep: int, stage: str):
        """A fixed-pool JSON call recorded as ``stage``, leaving ``keep`` calls for later stages; its parsed reply,
        or None when the budget cannot afford it or it fails (a best-effort answer follows)."""
        self.report(stage)
        done = budgeted_call(
            self.budget,
            self.meter,
            self.llm,
            "fixed",
            messages,
            max_tokens,
            lambda repair: self.client().chat_json(
                messages, schema, max_tokens=max_tokens, deadline=self.budget.deadline, meter=self.meter, repair=repair
            ),
            keep=keep,
            may_repair=True,
        )
        if done.skipped:
            self.stages.append({"stage": stage, "skipped": "budget"})
        elif done.error is not None:
            self.stages.append({"stage": stage, "error": str(done.error)})
        else:
            self.stages.append({"stage": stage, "calls": done.calls, "seconds": done.seconds})
            return done.reply.parsed
        return None
