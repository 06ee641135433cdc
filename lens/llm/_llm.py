"""One LLM client for every system: the ``openai`` SDK against any OpenAI-compatible base URL.

- Retries with exponential backoff (tenacity) on 429, 5xx, timeouts and dropped connections; after the last
  attempt a typed error (LLMRateLimitError, LLMServerError, LLMTimeoutError, LLMUnavailableError) is raised.
- ``chat_json`` asks for a JSON object, parses it into a pydantic model, and on failure sends one repair
  request quoting the error; a second failure raises LLMFormatError, which callers handle.
- Token counts are the response's ``usage`` (authoritative). Cache hits report zero tokens and ``cache_hit``.
- The API key is read from the environment variable the configuration names; it is never logged, cached,
  hashed or written anywhere, and an endpoint's error message that echoes it has it redacted.
- An endpoint that rejects every call of a question with one and the same request error (HTTP 400/413/422, e.g.
  a parameter it does not accept) has refused the question (``EndpointRefusedError``), like one that refuses auth.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, Callable, Generic, Sequence, TypeVar

import httpx
import openai
from platformdirs import user_cache_dir
from pydantic import BaseModel, ValidationError
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from lens._config import LensConfig, LLMSettings
from lens._errors import LensError
from lens.llm._cache import ResponseCache, request_key
from lens.llm._cost import CostMeter
from lens.llm._embedded import embedded_server

__all__ = [
    "LLMClient",
    "LLMResponse",
    "LLMError",
    "LLMUnavailableError",
    "LLMTimeoutError",
    "LLMRateLimitError",
    "LLMServerError",
    "LLMRequestError",
    "LLMFormatError",
    "LLMDeadlineError",
    "EndpointRefusedError",
    "is_endpoint_failure",
    "refusal",
    "rejected_every_call",
    "open_client",
]

log = logging.getLogger("lens.llm")
T = TypeVar("T", bound=BaseModel)


class LLMError(LensError):
    """The LLM could not give a usable answer."""


class LLMUnavailableError(LLMError):
    """The endpoint cannot be reached."""


class LLMTimeoutError(LLMError):
    """Every attempt timed out."""


class _StatusError(LLMError):
    def __init__(self, message: str, *, status: int | None = None, said: str = ""):
        super().__init__(message)
        self.status = status
        self.said = said  # the endpoint's own error message (one line, the API key redacted)


class LLMRateLimitError(_StatusError):
    """Still rate-limited (429) after every retry."""


class LLMServerError(_StatusError):
    """Still failing with 5xx after every retry."""


class LLMRequestError(_StatusError):
    """The endpoint rejected the request (4xx other than 429): bad model name, context too long, auth."""


class EndpointRefusedError(LLMError):
    """No call of a question got an answer: the endpoint refused or failed every one (the message says how)."""


class LLMFormatError(LLMError):
    """The reply was not valid JSON of the expected shape, even after one repair request."""


class LLMDeadlineError(LLMError):
    """The caller's time budget ran out before (``sent`` false) or while (``sent`` true) calling."""

    def __init__(self, message: str, *, sent: bool = False):
        super().__init__(message)
        self.sent = sent


@dataclass(frozen=True)
class LLMResponse(Generic[T]):
    text: str
    prompt_tokens: int
    completion_tokens: int
    cache_hit: bool
    seconds: float
    model: str
    parsed: Any = None
    # (token, log-probability) of each generated token, when asked for and the endpoint returns them
    logprobs: tuple[tuple[str, float], ...] | None = None
    # per generated token, the most likely alternatives (token, log-probability), when ``top_logprobs`` was asked
    top_logprobs: tuple[tuple[tuple[str, float], ...], ...] | None = None
    cached_tokens: int = 0  # prompt tokens the endpoint reused from its cache (llama.cpp: a shared prefix)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class _Transient(Exception):
    """Internal: a retryable failure wrapping the SDK exception."""

    def __init__(self, kind: str, exc: BaseException):
        super().__init__(kind)
        self.kind = kind
        self.exc = exc


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


def _extract_json(text: str) -> Any:
    """Parse a JSON object from a reply, tolerating code fences and text around one object."""
    cleaned = _FENCE.sub("", text.strip())
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        start, end = cleaned.find("{"), cleaned.rfind("}")
        if 0 <= start < end:
            return json.loads(cleaned[start : end + 1])
        raise


def _close_cut_json(text: str) -> Any:
    """A JSON object cut off mid-reply (the endpoint stopped at ``max_tokens``) closed after its last complete
    element: the longest prefix ending after a complete string or bracket that, with the still-open brackets
    closed, parses. None when the text holds no cut-off object (a complete one that fails to parse is not
    salvaged)."""
    cleaned = _FENCE.sub("", text.strip())
    start = cleaned.find("{")
    if start < 0:
        return None
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end of a complete value, the closers still owed there)
    in_string = escaped = False
    for i in range(start, len(cleaned)):
        ch = cleaned[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                cuts.append((i + 1, "".join(reversed(stack))))
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch or not stack:
                return None  # mismatched, or the object closed: not a cut-off reply
            cuts.append((i + 1, "".join(reversed(stack))))
    for end, closers in reversed(cuts):
        try:
            return json.loads(cleaned[start:end] + closers)
        except json.JSONDecodeError:
            continue
    return None


class LLMClient:
    """A chat client bound to one endpoint and model. Safe to share between threads."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        settings: LLMSettings | None = None,
        api_key: str | None = None,
        cache: ResponseCache | None = None,
        backend: str = "remote",
        runtime: dict | None = None,
        health: Callable[[], str | None] | None = None,
        key_name: str = "api_key",
    ):
        """``key_name`` names where ``api_key`` came from (the environment variable) in errors about it."""
        _check_key(api_key, key_name)
        self._key = api_key  # only to redact it from the endpoint's error messages
        self.settings = settings or LLMSettings()
        self.base_url = base_url
        self.model = model
        self.backend = backend
        self.runtime = dict(runtime or {})  # embedded: runtime name, version, llama.cpp system_info
        self._health = health  # embedded: says how the server process died, or None while it runs
        self.cache = cache
        # The legacy httpx client keeps one transport that tests can mock (respx) on the production path.
        self._http = httpx.Client(timeout=self.settings.call_timeout_s)
        try:
            self._client = openai.OpenAI(
                base_url=base_url,
                api_key=api_key or "no-key",
                max_retries=0,
                timeout=self.settings.call_timeout_s,
                http_client=self._http,
            )
        except (httpx.InvalidURL, ValueError) as exc:
            self._http.close()
            raise LLMUnavailableError(f"{base_url}: not a usable endpoint URL ({exc})") from None
        self._openai = openai
        self._logprobs_supported = True  # until the endpoint rejects the parameter once

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------------ calls

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
        deadline: float | None = None,
        meter: CostMeter | None = None,
        logprobs: bool = False,
        top_logprobs: int = 0,
    ) -> LLMResponse:
        """One chat completion (cached, retried). ``deadline`` is a ``time.monotonic()`` instant. ``logprobs``
        asks for the generated tokens' log-probabilities (``top_logprobs`` > 0: and that many alternatives per
        token); an endpoint that rejects the parameter is asked again without it (and not asked again), and one
        that ignores it gives ``logprobs=None``."""
        logprobs = logprobs and self._logprobs_supported
        params = {
            "temperature": self.settings.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.settings.max_output_tokens,
            "seed": self.settings.seed,
            "json": json_mode,
        }
        if logprobs:
            params["logprobs"] = True  # only when asked: the keys of every other request stay as they were
            if top_logprobs > 0:
                params["top_logprobs"] = int(top_logprobs)
        request = {"model": self.model, "messages": list(messages), "params": params}
        key = request_key(request)
        hit = self._cached(key, meter)
        if hit is not None:
            return hit
        t0 = time.monotonic()
        try:
            completion = self._call_with_retries(messages, params, deadline, meter)
        except LLMRequestError as exc:
            if logprobs and exc.status in (400, 422):
                log.info("%s rejected logprobs (%s); asking without them from now on", self.base_url, exc)
                self._logprobs_supported = False
                return self.chat(
                    messages,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    json_mode=json_mode,
                    deadline=deadline,
                    meter=meter,
                )
            if meter is not None:
                rejected = f"{_status_words(exc.status)}: {exc.said}" if exc.status in _REQUEST_LEVEL else None
                meter.add_error(str(exc), endpoint=is_endpoint_failure(exc), rejected=rejected)
            raise
        except LLMError as exc:
            if meter is not None:
                meter.add_error(str(exc), endpoint=is_endpoint_failure(exc))
            raise
        return self._received(completion, time.monotonic() - t0, logprobs, meter, key, request)

    def _cached(self, key: str, meter: CostMeter | None) -> LLMResponse | None:
        """The cached reply to the request ``key`` names (metered as a hit), or None."""
        if self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is None or not isinstance(hit.get("text"), str):
            return None
        lps, tops = _token_logprobs(hit)
        if meter is not None:
            meter.add(prompt_tokens=0, completion_tokens=0, cache_hit=True, seconds=0.0)
        log.debug("llm cache hit %s", key[:12])
        return LLMResponse(hit["text"], 0, 0, True, 0.0, self.model, logprobs=lps, top_logprobs=tops)

    def _received(self, completion, seconds: float, logprobs: bool, meter, key: str, request: dict) -> LLMResponse:
        """A completion as an :class:`LLMResponse`: metered, and stored in the cache."""
        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content if choice and choice.message else None) or ""
        token_lps, tops = _choice_logprobs(choice) if logprobs else (None, None)
        usage = completion.usage
        if usage is None:
            log.warning("endpoint returned no usage; tokens for this call count as 0")
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        cached = int(getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0)
        if meter is not None:
            meter.add(prompt_tokens=pt, completion_tokens=ct, cache_hit=False, seconds=seconds, cached_tokens=cached)
        if self.cache is not None:
            stored: dict[str, Any] = {"text": text, "prompt_tokens": pt, "completion_tokens": ct}
            if token_lps is not None:
                stored["logprobs"] = [list(t) for t in token_lps]
            if tops is not None:
                stored["top_logprobs"] = [[list(a) for a in alts] for alts in tops]
            self.cache.put(key, request, stored)
        log.debug("llm call model=%s prompt=%d (cached %d) completion=%d %.2fs", self.model, pt, cached, ct, seconds)
        return LLMResponse(
            text, pt, ct, False, seconds, self.model, logprobs=token_lps, top_logprobs=tops, cached_tokens=cached
        )

    def chat_json(
        self,
        messages: Sequence[dict[str, str]],
        schema: type[T],
        *,
        repair: bool = True,
        **options: Any,
    ) -> LLMResponse:
        """A chat completion parsed into ``schema``; one repair request on failure (unless ``repair`` is
        False, e.g. when the caller's call budget has no room for it), then LLMFormatError. ``options`` are
        :meth:`chat`'s keyword arguments, passed to both requests (``json_mode`` is always on)."""
        kw = options | {"json_mode": True}
        resp = self.chat(messages, **kw)
        parsed, problem = self._parse(resp.text, schema)
        if parsed is not None:
            return _with_parsed(resp, parsed)
        if not repair:
            raise LLMFormatError(f"{schema.__name__}: reply not valid and no repair allowed: {problem}")
        repair_messages = list(messages) + [
            {"role": "assistant", "content": resp.text},
            {
                "role": "user",
                "content": f"That reply could not be used: {problem}. Reply again with only one JSON object "
                f"in the requested format.",
            },
        ]
        resp2 = self.chat(repair_messages, **kw)
        parsed, problem2 = self._parse(resp2.text, schema)
        if parsed is not None:
            return _with_parsed(resp2, parsed, extra=resp)
        raise LLMFormatError(f"{schema.__name__}: reply not valid after one repair request: {problem2}")

    @staticmethod
    def _parse(text: str, schema: type[T]) -> tuple[T | None, str]:
        try:
            data = _extract_json(text)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON ({exc.msg} at position {exc.pos})"
            data = _close_cut_json(text)  # cut off at max_tokens: its complete elements, if they suffice
            try:
                return (schema.model_validate(data), "") if data is not None else (None, problem)
            except ValidationError:
                return None, problem
        try:
            return schema.model_validate(data), ""
        except ValidationError as exc:
            errs = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()[:5])
            return None, f"JSON does not match the format ({errs})"

    def _call_with_retries(self, messages, params, deadline, meter=None):
        s = self.settings
        backoff = s.retry_backoff_s
        wait = wait_exponential(multiplier=backoff, min=backoff, max=max(backoff, 30.0))
        retrying = Retrying(
            stop=stop_after_attempt(s.max_retries + 1),
            wait=wait,
            retry=retry_if_exception_type(_Transient),
            reraise=False,
        )
        try:
            for attempt in retrying:
                if meter is not None and attempt.retry_state.attempt_number > 1:
                    meter.add_retry()
                with attempt:
                    t0 = time.monotonic()
                    try:
                        return self._call_once(messages, params, deadline)
                    except (_Transient, LLMError) as exc:
                        sent = not isinstance(exc, LLMDeadlineError) or exc.sent
                        if meter is not None and sent:  # a request went out and brought nothing usable
                            meter.add_failure(time.monotonic() - t0)
                        raise
        except RetryError as exc:
            last = exc.last_attempt.exception()
            assert isinstance(last, _Transient)
            self._raise_final(last)
        raise AssertionError("unreachable")  # pragma: no cover

    def _call_once(self, messages, params, deadline):
        oa = self._openai
        timeout = self.settings.call_timeout_s
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0.5:
                raise LLMDeadlineError("the question's time budget is spent")
            timeout = min(timeout, remaining)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": params["temperature"],
            "max_tokens": params["max_tokens"],
            "seed": params["seed"],
            "timeout": timeout,
        }
        if params["json"]:
            kwargs["response_format"] = {"type": "json_object"}
        if params.get("logprobs"):
            kwargs["logprobs"] = True
            if params.get("top_logprobs"):
                kwargs["top_logprobs"] = params["top_logprobs"]
        try:
            return self._client.chat.completions.create(**kwargs)
        except oa.APITimeoutError as exc:
            if deadline is not None and deadline - time.monotonic() <= 0.5:
                raise LLMDeadlineError("the question's time budget ran out during an LLM call", sent=True) from None
            raise _Transient("timeout", exc) from None
        except oa.RateLimitError as exc:
            raise _Transient("rate_limit", exc) from None
        except oa.APIConnectionError as exc:
            raise _Transient("connection", exc) from None
        except oa.APIStatusError as exc:
            if exc.status_code >= 500:
                raise _Transient("server", exc) from None
            said = self._said(exc)
            raise LLMRequestError(
                f"{self.base_url} rejected the request for model {self.model!r}: HTTP {exc.status_code} {said}",
                status=exc.status_code,
                said=said,
            ) from None

    def _raise_final(self, last: _Transient) -> None:
        n = self.settings.max_retries + 1
        if last.kind == "timeout":
            raise LLMTimeoutError(
                f"{self.model} at {self.base_url}: timed out {n} times (limit {self.settings.call_timeout_s:.0f} s per call)"
            ) from None
        if last.kind == "rate_limit":
            raise LLMRateLimitError(
                f"{self.model} at {self.base_url}: rate-limited (429) on all {n} attempts", status=429
            ) from None
        if last.kind == "server":
            said = self._said(last.exc)
            raise LLMServerError(
                f"{self.model} at {self.base_url}: server error on all {n} attempts: {said}",
                status=getattr(last.exc, "status_code", None),
                said=said,
            ) from None
        died = self._health() if self._health is not None else None
        if died:
            raise LLMUnavailableError(died) from None
        raise LLMUnavailableError(f"cannot reach {self.base_url} ({n} attempts): {type(last.exc).__name__}") from None

    def _said(self, exc: BaseException) -> str:
        """What the endpoint said in ``exc`` (the error body's message): one line of at most 300 characters, with
        the API key redacted — every endpoint message lens prints or writes passes through here."""
        body = getattr(exc, "body", None)
        said = body.get("message") if isinstance(body, dict) else body
        if not isinstance(said, str) or not said.strip():
            said = getattr(exc, "message", None) or str(exc)
        if self._key:
            said = said.replace(self._key, "[API key redacted]")
        return " ".join(said.split())[:300]


def _check_key(key: str | None, name: str) -> None:
    """LLMUnavailableError naming ``name`` (never the key) unless ``key`` can travel in an HTTP header: printable
    ASCII, no space at its end."""
    key = key or ""
    for i, ch in enumerate(key, 1):
        if " " <= ch <= "~" and not (ch == " " and i == len(key)):
            continue
        what = "a space at its end" if ch == " " else "a newline" if ch in "\r\n" else "a control character"
        what = what if ch.isascii() else "a non-ASCII character"
        raise LLMUnavailableError(
            f"{name}: the API key holds {what} at position {i}, which an HTTP header cannot carry (printable ASCII only)"
        )


def _with_parsed(resp: LLMResponse, parsed: Any, extra: LLMResponse | None = None) -> LLMResponse:
    pt = resp.prompt_tokens + (extra.prompt_tokens if extra else 0)
    ct = resp.completion_tokens + (extra.completion_tokens if extra else 0)
    secs = resp.seconds + (extra.seconds if extra else 0.0)
    hit = resp.cache_hit and (extra.cache_hit if extra else True)
    cached = resp.cached_tokens + (extra.cached_tokens if extra else 0)
    return LLMResponse(resp.text, pt, ct, hit, secs, resp.model, parsed, resp.logprobs, resp.top_logprobs, cached)


_Alternatives = tuple[tuple[str, float], ...]


def _pairs(items: Any) -> _Alternatives | None:
    """(token, logprob) pairs of SDK objects or stored lists; None if any item is malformed."""
    out = []
    for item in items:
        if isinstance(item, (list, tuple)) and len(item) == 2:
            token, lp = item
        else:
            token, lp = getattr(item, "token", None), getattr(item, "logprob", None)
        if not isinstance(token, str) or not isinstance(lp, (int, float)):
            return None
        out.append((token, float(lp)))
    return tuple(out)


def _choice_logprobs(choice: Any) -> tuple[_Alternatives | None, tuple[_Alternatives, ...] | None]:
    """(token, logprob) pairs of a completion choice and, per token, its top alternatives (None when the
    endpoint sent none)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None, None
    tokens = _pairs(content)
    alts = [_pairs(getattr(item, "top_logprobs", None) or ()) for item in content]
    tops = None if tokens is None or any(a is None for a in alts) or not any(alts) else tuple(alts)
    return tokens, tops  # type: ignore[return-value]


def _token_logprobs(stored: dict[str, Any]) -> tuple[_Alternatives | None, tuple[_Alternatives, ...] | None]:
    items, tops = stored.get("logprobs"), stored.get("top_logprobs")
    tokens = _pairs(items) if isinstance(items, list) else None
    if tokens is None or not isinstance(tops, list):
        return tokens, None
    alts = [_pairs(a) if isinstance(a, list) else None for a in tops]
    return tokens, None if any(a is None for a in alts) else tuple(alts)  # type: ignore[arg-type]


# 4xx statuses that say something about this one request (too long, malformed), not about the endpoint
_REQUEST_LEVEL = frozenset({400, 413, 422})


def is_endpoint_failure(exc: BaseException) -> bool:
    """True when ``exc`` says the endpoint could not serve (unreachable, auth, unknown model, rate limit, 5xx,
    every attempt timed out), not that this question's request or reply was bad (a malformed reply, a request
    too long, the question's own time budget spent). Benchmark rows that failed this way are retried on resume."""
    if isinstance(exc, (EndpointRefusedError, LLMUnavailableError, LLMTimeoutError, LLMRateLimitError, LLMServerError)):
        return True
    if isinstance(exc, LLMRequestError):
        return exc.status not in _REQUEST_LEVEL
    return False


def _status_words(status: int | None) -> str:
    if status is None:
        return "an error"
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def refusal(exc: BaseException, meter: CostMeter, settings: LLMSettings) -> EndpointRefusedError | None:
    """The error to raise when ``exc`` shows the endpoint refused every call of a question so far (no call has
    succeeded), or None when the question should go on (some call succeeded, or the failure is the request's)."""
    cost = meter.cost
    if cost.oracle_calls > 0:
        return None
    timed_out = isinstance(exc, LLMTimeoutError) or (isinstance(exc, LLMDeadlineError) and cost.failed_calls > 0)
    if not (timed_out or is_endpoint_failure(exc)):
        return rejected_every_call(meter, at_least=2)  # one failed request may be this request's own fault
    if isinstance(exc, EndpointRefusedError):
        return exc
    attempts = settings.max_retries + 1
    if timed_out:
        return EndpointRefusedError(
            f"every call to the endpoint timed out ({settings.call_timeout_s:.0f} s per call, {cost.failed_calls} "
            f"attempts) — check that the server answers, or raise llm.call_timeout_s"
        )
    if isinstance(exc, LLMUnavailableError):
        return EndpointRefusedError(str(exc))
    status = getattr(exc, "status", None)
    words = _status_words(status)
    if status in (401, 403):
        key = settings.api_key_env
        hint = f"check {key}" + ("" if os.environ.get(key) else " (it is not set)")
        return EndpointRefusedError(f"the endpoint refused every call: {words} — {hint}")
    if status == 404:
        return EndpointRefusedError(
            f"the endpoint refused every call: {words} — check the model name ({settings.served_model}) and --base-url"
        )
    if isinstance(exc, (LLMRateLimitError, LLMServerError)):
        verb = "refused" if status == 429 else "failed"
        return EndpointRefusedError(f"the endpoint {verb} every call: {words} (on all {attempts} attempts of each)")
    return EndpointRefusedError(f"the endpoint refused every call: {words}: {exc}")


def rejected_every_call(meter: CostMeter, *, at_least: int = 1) -> EndpointRefusedError | None:
    """The error to raise when the endpoint rejected every call of a question (at least ``at_least`` of them) with
    one and the same request error: that says nothing about the question (a setting it does not accept)."""
    found = meter.rejection()
    if found is None or found[1] < at_least:
        return None
    return EndpointRefusedError(f"the endpoint rejected every call: {found[0]}")


def open_client(config: LensConfig) -> LLMClient:
    """The client a configuration describes: its endpoint, or the embedded local model started on demand."""
    s = config.llm
    cache = None
    if s.cache:
        cache = ResponseCache(Path(s.cache_dir) if s.cache_dir else Path(user_cache_dir("lens")) / "responses")
    if s.base_url:
        return LLMClient(
            base_url=s.base_url,
            model=s.served_model,
            settings=s,
            api_key=os.environ.get(s.api_key_env) or None,
            cache=cache,
            backend="remote",
            key_name=s.api_key_env,
        )
    server = embedded_server(s.local_model, n_ctx=s.n_ctx, n_threads=s.n_threads, startup_timeout_s=s.startup_timeout_s)
    return LLMClient(
        base_url=server.base_url,
        model=s.local_model,
        settings=s,
        api_key=None,
        cache=cache,
        backend=f"embedded llama.cpp ({s.local_model})",
        runtime=server.runtime,
        health=server.death,
    )
