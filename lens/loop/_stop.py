"""Why exploration stopped: a reason from a closed set, with the budget's detail and the re-entry's own stop."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class StopReason(str, Enum):
    """The loop's stop rules (their values are the strings rows and traces carry)."""

    CERTIFIED = "certified"  # every requirement's GLR reached the threshold
    FUTILE = "futile"  # no outstanding requirement can still certify
    CANDIDATES = "candidates"  # no window left to read
    UNINFORMATIVE = "uninformative"  # no reading left could change a requirement's favoured window or certify it
    BUDGET = "budget"  # a pool, the rounds, the tokens or the time is spent (``Stop.detail`` says which)
    LLM_ERROR = "llm-error"  # a reading call failed
    NO_EXPLORATION = "ablation:no-exploration"  # the ablation that skips the loop


@dataclass(frozen=True)
class Stop:
    """One stop: its reason, the spent budgets for ``BUDGET`` and, after a self-correction, the re-entry's stop."""

    reason: StopReason
    detail: str = ""
    reentry: Stop | None = None

    @classmethod
    def budget(cls, exhausted: list[str]) -> Stop:
        return cls(StopReason.BUDGET, ",".join(exhausted))

    @classmethod
    def parse(cls, text: str) -> Stop:
        """The stop a string of :meth:`__str__` (``AskResult.stop_reason``) names."""
        first, sep, rest = text.partition("; self-correction: ")
        reentry = cls.parse(rest) if sep else None
        if first.startswith(f"{StopReason.BUDGET.value}:"):
            return cls(StopReason.BUDGET, first.split(":", 1)[1], reentry)
        return cls(StopReason(first), "", reentry)

    def __str__(self) -> str:
        text = self.reason.value + (f":{self.detail}" if self.detail or self.reason is StopReason.BUDGET else "")
        return text if self.reentry is None else f"{text}; self-correction: {self.reentry}"
