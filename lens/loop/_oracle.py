"""One budgeted oracle call: checked against its pool, charged whatever happens, endpoint refusals raised."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from lens._config import LLMSettings
from lens.llm._cost import CostMeter
from lens.llm._llm import LLMDeadlineError, LLMError, LLMUnavailableError, refusal
from lens.loop._budget import Budget
from lens.reader._windows import estimate_tokens


@dataclass
class OracleCall:
    """What one call came to: its reply, or that the budget could not afford it, or the error it ended in."""

    reply: Any = None
    skipped: bool = False
    error: LLMError | None = None
    calls: int = 0  # oracle calls it made (a repair request is a second)
    seconds: float = 0.0


def budgeted_call(
    budget: Budget,
    meter: CostMeter,
    llm: LLMSettings,
    pool: str,
    messages: list[dict[str, str]],
    max_tokens: int,
    send: Callable[[bool], Any],
    *,
    keep: int = 0,
    may_repair: bool = False,
) -> OracleCall:
    """``send(repair)`` when ``pool`` affords it while leaving ``keep`` calls (``repair``: ``may_repair`` and a
    second call fits too).

    The calls made are charged to ``pool``. An unreachable endpoint, or one that refused every call of the question
    so far, raises; any other LLM error (a deadline, a reply that never parsed) is returned in ``error``.
    """
    est = sum(estimate_tokens(m["content"]) for m in messages) + max_tokens
    if not budget.can_call(pool, est, calls=1 + keep):
        return OracleCall(skipped=True)
    repair = may_repair and budget.can_call(pool, est, calls=2 + keep)
    before = meter.cost.oracle_calls
    t0 = time.monotonic()
    try:
        reply = send(repair)
        return OracleCall(reply, calls=meter.cost.oracle_calls - before, seconds=round(time.monotonic() - t0, 3))
    except LLMUnavailableError:
        raise  # the endpoint is gone: nothing else this question does can work
    except LLMError as exc:
        # a spent deadline on a reading is the budget's stop, not the endpoint's refusal
        refused = None if pool == "round" and isinstance(exc, LLMDeadlineError) else refusal(exc, meter, llm)
        if refused is not None:
            raise refused from None  # no call has succeeded: an answer from nothing would look like one
        return OracleCall(error=exc, calls=meter.cost.oracle_calls - before)
    finally:
        budget.charge(pool, meter.cost.oracle_calls - before)
