"""Cost accounting: oracle calls, tokens (authoritative, from responses), seconds and cache hits."""

from __future__ import annotations

import threading
from dataclasses import replace

from lens._result import Cost

__all__ = ["Cost", "CostMeter"]


class CostMeter:
    """A thread-safe running total; each LLM response is added once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cost = Cost()
        self.last_error: str | None = None  # the message of the last call that failed for good
        self._failed = 0  # calls that failed for good
        self._rejections: dict[str, int] = {}  # what the endpoint said rejecting a request -> how many calls

    def add(
        self, *, prompt_tokens: int, completion_tokens: int, cache_hit: bool, seconds: float, cached_tokens: int = 0
    ) -> None:
        with self._lock:
            c = self._cost
            self._cost = replace(
                c,
                oracle_calls=c.oracle_calls + 1,
                prompt_tokens=c.prompt_tokens + prompt_tokens,
                cached_prompt_tokens=c.cached_prompt_tokens + cached_tokens,
                completion_tokens=c.completion_tokens + completion_tokens,
                cache_hits=c.cache_hits + int(cache_hit),
                llm_seconds=c.llm_seconds + seconds,
            )

    def add_failure(self, seconds: float) -> None:
        """An attempt that returned no usable response: no tokens known, time spent."""
        with self._lock:
            c = self._cost
            self._cost = replace(c, llm_seconds=c.llm_seconds + seconds, failed_calls=c.failed_calls + 1)

    def add_retry(self) -> None:
        """A request about to be re-sent after a failed attempt."""
        with self._lock:
            self._cost = replace(self._cost, retries=self._cost.retries + 1)

    def add_error(self, message: str, *, endpoint: bool, rejected: str | None = None) -> None:
        """A call that failed for good (after its retries); ``endpoint``: because of the endpoint; ``rejected``:
        the status and message with which the endpoint rejected the request (HTTP 400/413/422), if it did."""
        with self._lock:
            self.last_error = message
            self._failed += 1
            if rejected is not None:
                self._rejections[rejected] = self._rejections.get(rejected, 0) + 1
            if endpoint:
                self._cost = replace(self._cost, endpoint_errors=self._cost.endpoint_errors + 1)

    def rejection(self) -> tuple[str, int] | None:
        """(what the endpoint said, how many calls) when it rejected every call made so far with one and the
        same request error — none answered, none failed otherwise —, else None."""
        with self._lock:
            if self._cost.oracle_calls or len(self._rejections) != 1:
                return None
            said, n = next(iter(self._rejections.items()))
            return (said, n) if n == self._failed else None

    @property
    def cost(self) -> Cost:
        with self._lock:
            return self._cost
