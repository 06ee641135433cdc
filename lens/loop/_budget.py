"""The per-question budget: oracle calls ≤ c0 + c1·L, tokens, and wall-clock time — enforced, not advisory.

Calls come from two pools. The fixed pool (c0) pays for decomposition, synthesis, the coverage check and
re-synthesis of self-correction, answer shortening, and any JSON repair among them. Each exploration
round adds c1 calls to the round pool (its readings, one call each). A call is only made when
its pool can pay for it, including the repair it may need; so for L rounds run, calls ≤ c0 + c1·L whatever the
number of requirements or the size of the corpus. Tokens are checked against a pre-call estimate and charged
from the responses' usage; the deadline is passed down to every LLM call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from lens._config import BudgetSettings
from lens.llm._cost import CostMeter

__all__ = ["Budget"]


@dataclass
class Budget:
    settings: BudgetSettings
    meter: CostMeter
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0
    fixed_used: int = 0
    round_used: int = 0
    exhausted: list[str] = field(default_factory=list)  # why the budget stopped something, in order

    @property
    def deadline(self) -> float:
        return self.started + self.settings.question_timeout_s

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    def tokens_left(self) -> int:
        return self.settings.max_tokens_per_query - self.meter.cost.tokens

    def max_calls(self) -> int:
        """c0 + c1·L for the L rounds run so far."""
        return self.settings.c0 + self.settings.c1 * self.rounds

    def _note(self, why: str) -> None:
        if why not in self.exhausted:
            self.exhausted.append(why)

    def start_round(self) -> bool:
        """Open an exploration round if rounds, time and tokens remain."""
        if self.rounds >= self.settings.max_rounds:
            self._note("rounds")
            return False
        if self.seconds_left() <= 1.0:
            self._note("time")
            return False
        if self.tokens_left() <= 0:
            self._note("tokens")
            return False
        self.rounds += 1
        return True

    def can_call(self, pool: str, estimated_tokens: int, calls: int = 1) -> bool:
        """Whether ``calls`` calls of about ``estimated_tokens`` each fit the pool, tokens and time."""
        if pool == "fixed":
            left = self.settings.c0 - self.fixed_used
        else:
            left = self.settings.c1 * self.rounds - self.round_used
        if left < calls:
            self._note(f"{pool} calls")
            return False
        if estimated_tokens > self.tokens_left():
            self._note("tokens")
            return False
        if self.seconds_left() <= 1.0:
            self._note("time")
            return False
        return True

    def charge(self, pool: str, calls: int) -> None:
        if pool == "fixed":
            self.fixed_used += calls
        else:
            self.round_used += calls

    def to_dict(self) -> dict:
        return {
            "rounds": self.rounds,
            "max_oracle_calls": self.max_calls(),
            "fixed_calls": self.fixed_used,
            "round_calls": self.round_used,
            "tokens_left": self.tokens_left(),
            "exhausted": list(self.exhausted),
        }
