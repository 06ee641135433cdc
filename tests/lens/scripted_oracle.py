"""A scripted LLM behind a respx-mocked endpoint, for end-to-end agent tests on real files.

The agent runs its production path (real ``openai`` client, real prompts, real verification); only the HTTP
transport answers from a script. The script recognises each typed interface by its system prompt and replies
like a small but honest model: decompositions from a table, observations from rules that fire when a passage
really contains a trigger text, syntheses from a function of the prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable

import httpx

_PASSAGE = re.compile(r'<passage id="(P\d+)" source="([^"]*)">\n(.*?)\n</passage>', re.S)
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
    calls: list[str] = field(default_factory=list)  # interface of every call, in order
    requests: list[dict] = field(default_factory=list)  # raw request bodies
    observed_sources: list[list[str]] = field(default_factory=list)  # passage sources per observation
    malformed: bool = False  # reply with broken JSON to every call
    logprob: float | None = None  # observation replies carry this log-probability for every token

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
        elif kind == "observation":
            text = json.dumps(self._observe(user))
        elif kind == "coverage":
            text = json.dumps(self._coverage(user))
        elif kind == "synthesis":
            text = json.dumps({"answer": self.synthesis(user), "passages": ["P1"], "missing": []})
        elif kind == "calibration":
            text = json.dumps({"answer": user.split("Long answer:", 1)[1].split("\n")[0].strip()})
        else:
            text = "{}"
        lps = self.logprob if kind == "observation" and body.get("logprobs") else None
        return _completion(text, prompt_tokens=len(system + user) // 4, completion_tokens=len(text) // 4, logprob=lps)

    @staticmethod
    def _kind(system: str) -> str:
        if system.startswith("You split a question") or system.startswith("You break a comparison"):
            return "decomposition"
        if system.startswith("You answer short questions"):
            return "observation"
        if system.startswith("You decide whether"):
            return "coverage"
        if system.startswith("You answer a question using"):
            return "synthesis"
        if system.startswith("You shorten"):
            return "calibration"
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

    def _observe(self, user: str) -> dict:
        passages = _PASSAGE.findall(user)
        self.observed_sources.append([src for _, src, _ in passages])
        facts = dict(_FACT.findall(user.split("Questions:", 1)[1]))
        out: dict = {rid: None for rid in facts}
        for rid, text in facts.items():
            for rule in self.rules:
                if not re.search(rule.fact, text):
                    continue
                for pid, _src, body in passages:
                    if rule.trigger in body:
                        sent = next(
                            (
                                int(m.group(1))
                                for m in re.finditer(r"^\[(\d+)\] (.*)$", body, re.M)
                                if rule.quote in m.group(2)
                            ),
                            0,
                        )
                        out[rid] = {"passage": pid, "sentence": sent, "quote": rule.quote, "value": rule.value}
                        break
                if out[rid]:
                    break
        out["names"] = []
        return out


def _completion(text: str, prompt_tokens: int, completion_tokens: int, logprob: float | None = None) -> httpx.Response:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if logprob is not None:  # OpenAI's shape: one entry per generated token (here: 3-character pieces)
        pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
        choice["logprobs"] = {
            "content": [{"token": t, "logprob": logprob, "bytes": None, "top_logprobs": []} for t in pieces]
        }
    return httpx.Response(
        200,
        json={
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
        },
    )
