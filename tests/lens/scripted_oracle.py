"""A scripted LLM behind a respx-mocked endpoint, for end-to-end agent tests on real files.

The agent runs its production path (real ``openai`` client, real prompts, real verification); only the HTTP
transport answers from a script. The script recognises each typed interface by its system prompt and replies
like a small but honest model: decompositions from a table, readings from rules that fire when a passage really
contains a trigger text (with scripted token log-probabilities when asked for), syntheses from a function of the
prompt.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import httpx

_PASSAGE = re.compile(r'<passage id="(P\d+)" source="([^"]*)">\n(.*?)\n</passage>', re.S)
_SENTENCE = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_FACT = re.compile(r"^(R\d+): (.+)$", re.M)


@dataclass
class Rule:
    """When fact text matches ``fact`` and a passage contains ``trigger``, report ``quote``/``value``."""

    fact: str
    trigger: str
    quote: str
    value: str


@dataclass
class ScriptedOracle:
    decompositions: dict[str, dict] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    synthesis: Callable[[str], str] = lambda prompt: "unknown"
    # the shortening reply (a JSON value: a string, or what small models write instead); None: the long answer's
    # first line back
    shorten: Callable[[str], object] | None = None
    calls: list[str] = field(default_factory=list)  # interface of every call, in order
    requests: list[dict] = field(default_factory=list)  # raw request bodies
    observed_sources: list[list[str]] = field(default_factory=list)  # passage sources per observation
    malformed: bool = False  # reply with broken JSON to every call
    # P the reading's number token puts on its answer (top alternatives: the answer and the other choice, "0" or
    # "1"); None: readings carry no log-probabilities
    confidence: float | None = None
    # readings of passages whose source contains a key: this confidence instead (a weaker or stronger reading)
    confidence_by_source: dict[str, float] = field(default_factory=dict)
    # raw log-probabilities of the number written and of its alternative at the number token, instead of
    # ``confidence`` (any float, out-of-range and non-finite ones included: what a faulty endpoint sends)
    number_logprobs: tuple[float, float] | None = None

    def reply(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        # the first user message is the prompt (a repair request appends more turns after it)
        system = body["messages"][0]["content"]
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        kind = self._kind(system)
        self.calls.append(kind)
        if self.malformed:
            text = '{"broken": '
        elif kind == "decomposition":
            q = user.split("Q:", 1)[1].strip()
            text = json.dumps(self.decompositions.get(q, {"questions": [q]}))
        elif kind == "reading":
            text, source = self._read(user)
        elif kind == "coverage":
            text = json.dumps(self._coverage(user))
        elif kind == "synthesis":
            text = json.dumps({"answer": self.synthesis(user), "passages": ["P1"], "missing": []})
        elif kind == "shorten":
            long_answer = user.split("Long answer:", 1)[1].split("\n")[0].strip()
            text = json.dumps({"answer": long_answer if self.shorten is None else self.shorten(long_answer)})
        else:
            text = "{}"
        conf = lps = None
        if kind == "reading" and body.get("logprobs"):
            conf = next((c for key, c in self.confidence_by_source.items() if key in source), self.confidence)
            lps = self.number_logprobs
        return _completion(
            text,
            prompt_tokens=len(system + user) // 4,
            completion_tokens=len(text) // 4,
            confidence=conf,
            number_logprobs=lps,
        )

    @staticmethod
    def _kind(system: str) -> str:
        if system.startswith("You split a question") or system.startswith("You break a comparison"):
            return "decomposition"
        if system.startswith("You check whether a passage states one fact"):
            return "reading"
        if system.startswith("You decide whether"):
            return "coverage"
        if system.startswith("You answer a question using"):
            return "synthesis"
        if system.startswith("You shorten"):
            return "shorten"
        return "other"

    def _coverage(self, user: str) -> dict:
        """Honest: a fact is missing unless one of its rules' triggers is in some passage."""
        passages = " ".join(body for _, _, body in _PASSAGE.findall(user))
        facts = dict(_FACT.findall(user.split("Facts needed:", 1)[1].split("Facts already confirmed:", 1)[0]))
        missing = [
            rid
            for rid, text in facts.items()
            if not any(re.search(r.fact, text) and r.trigger in passages for r in self.rules)
        ]
        return {"complete": not missing, "missing": missing}

    def _read(self, user: str) -> tuple[str, str]:
        """The reply to a reading prompt ("<sentence number> | value", or "0") and the passage's source."""
        ((_, source, body),) = _PASSAGE.findall(user)
        self.observed_sources.append([source])
        fact = user.split("Fact to find:", 1)[1].split("\n", 1)[0].strip()
        for rule in self.rules:
            if re.search(rule.fact, fact) and rule.trigger in body:
                n = next((int(m.group(1)) for m in _SENTENCE.finditer(body) if rule.quote in m.group(2)), 0)
                if n:
                    return f"{n} | {rule.value}", source
        return "0", source


def _completion(
    text: str,
    prompt_tokens: int,
    completion_tokens: int,
    confidence: float | None = None,
    number_logprobs: tuple[float, float] | None = None,
) -> httpx.Response:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if confidence is not None or number_logprobs is not None:  # OpenAI's shape: each token with its alternatives
        number, rest = text.split(" ", 1) if " " in text else (text, "")
        other = "1" if number == "0" else "0"
        if number_logprobs is not None:
            lp, alt = number_logprobs
        else:
            assert confidence is not None
            lp, alt = math.log(confidence), math.log(max(1e-9, 1 - confidence))
        content = [
            {
                "token": number,
                "logprob": lp,
                "bytes": None,
                "top_logprobs": [
                    {"token": number, "logprob": lp, "bytes": None},
                    {"token": other, "logprob": alt, "bytes": None},
                ],
            }
        ]
        content += (
            [
                {
                    "token": " " + rest,
                    "logprob": -0.01,
                    "bytes": None,
                    "top_logprobs": [{"token": " " + rest, "logprob": -0.01, "bytes": None}],
                }
            ]
            if rest
            else []
        )
        choice["logprobs"] = {"content": content}
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    # json.dumps, not httpx's json=: a faulty endpoint's NaN and Infinity go out as the bare words it would send
    return httpx.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})
