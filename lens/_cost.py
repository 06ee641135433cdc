"""Cost accounting: oracle calls, tokens (authoritative, from responses), seconds and cache hits."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

__all__ = ["Cost", "CostMeter"]


@dataclass(frozen=True)
class Cost:
    """What one question (or one run) spent. Cache hits count as calls with zero tokens."""

    oracle_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    llm_seconds: float = 0.0
    failed_calls: int = 0  # attempts that got no usable response (timeouts, 5xx, 429), retried or not

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tokens"] = self.tokens
        d["llm_seconds"] = round(self.llm_seconds, 3)
        return d


class CostMeter:
    """A thread-safe running total; each LLM response is added once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cost = Cost()

    def add(self, *, prompt_tokens: int, completion_tokens: int, cache_hit: bool, seconds: float) -> None:
        with self._lock:
            c = self._cost
            self._cost = Cost(
                oracle_calls=c.oracle_calls + 1,
                prompt_tokens=c.prompt_tokens + prompt_tokens,
                completion_tokens=c.completion_tokens + completion_tokens,
                cache_hits=c.cache_hits + int(cache_hit),
                llm_seconds=c.llm_seconds + seconds,
                failed_calls=c.failed_calls,
            )

    def add_failure(self, seconds: float) -> None:
        """An attempt that returned no usable response: no tokens known, time spent."""
        with self._lock:
            c = self._cost
            self._cost = Cost(c.oracle_calls, c.prompt_tokens, c.completion_tokens, c.cache_hits,
                              c.llm_seconds + seconds, c.failed_calls + 1)

    @property
    def cost(self) -> Cost:
        with self._lock:
            return self._cost
