"""ReAct search (Yao et al., 2023) over the local snapshot: a Thought/Action loop with four actions.

- ``search[words]`` — lexical search over the folder as it is now (``LiveSearch``: the shared BM25 layer, in
  memory, never the web). An exact title match wins, as in the original's Wikipedia search; the observation
  shows the top article's first sentences and the titles of up to four other matches.
- ``open[title]`` — an article by exact title (case-insensitive): up to 12 sentences; otherwise similar titles.
- ``lookup[keyword]`` — the next sentence containing the keyword in the article shown last (cycling through the
  matches on repeated lookups, as the original does).
- ``finish[answer]`` — the answer; the episode ends.

Each step is one chat call (``harness/prompts/react.md``: instructions and one worked example with invented facts).
The first ``Thought``/``Action`` pair of a reply is used; anything after it (a model inventing its own
observation) is discarded. A reply without a usable action is a **bad-format step**: it is counted, costs its
step, and the model is told the format again. After ``max_steps`` (7, the original's cap for HotpotQA) steps
without ``finish`` — or when the question's token budget has no room for another step — one more call asks for
``finish[answer]`` only (**forced finish**; the token budget gates steps, and this one short call is always made,
so every episode that does not time out ends with an answer attempt). The wall-clock cap is never exceeded: every
call carries the question's deadline. A forced-finish reply that copies the instruction's placeholder
(``finish[answer]``) is no answer. One addition to the original: repeating an action that already gave the same
observation is pointed out in the observation (small models otherwise loop on one failing lookup until the cap).
Document text only enters prompts fenced (``fence_passage``).

What it read is its evidence: every passage shown in an observation (title, sentences, line range) is an
evidence passage (for Ground) and its document a retrieved document (for Ev.Rec); titles listed as "other
results" were not read and do not count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.datasets import article_key
from harness.bench.snapshots import SENTENCE_LINE_OFFSET
from harness.bench.systems.answer_call import PROMPTS, clean_answer
from harness.bench.systems.base import QuestionBudget, RunLevelError, System, error_text
from harness.bench.systems.corpus import SnapshotDoc
from harness.bench.systems.live_search import LiveSearch, SearchState
from harness.bench.systems.prediction import Passage, Prediction, RetrievedDoc
from lens import LLMClient, LLMError
from lens.parts import fence_passage, render

__all__ = ["ReActSystem", "parse_step", "Step", "MAX_STEPS"]

MAX_STEPS = 7
STEP_TOKENS = 192  # one Thought + one Action
SEARCH_SENTENCES = 5
OPEN_SENTENCES = 12
OTHER_RESULTS = 4
CHARS_PER_TOKEN = 3.5  # a conservative estimate for keeping the trajectory inside the context window

FORMAT_HELP = (
    "Invalid format. Reply with exactly two lines: 'Thought {n}: ...' and 'Action {n}: ' followed by "
    "search[words], open[title], lookup[keyword] or finish[answer]."
)
FORCED_FINISH = (
    "You have used all your steps. Reply now with one line, finish[...], putting your best short answer to the "
    "question, from what you have read, inside the brackets."
)
REPEATED = "(You already did exactly this at step {n}; the result is the same. Try a different action.) "

_ACTIONS = ("search", "lookup", "open", "finish")
_LABELLED = re.compile(
    r"^[\s*#>-]*Action\s*\d*\s*[:.]?\s*\**\s*(search|lookup|open|finish)\s*\[(.*)\]", re.IGNORECASE | re.MULTILINE
)
_BARE = re.compile(r"^[\s*#>-]*(search|lookup|open|finish)\s*\[(.*)\]", re.IGNORECASE | re.MULTILINE)
_THOUGHT = re.compile(r"^[\s*#>-]*Thought\s*\d*\s*[:.]\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_ANY_FINISH = re.compile(r"finish\s*\[(.*?)\]", re.IGNORECASE | re.DOTALL)


@dataclass
class Step:
    """One parsed reply: ``action`` is None for a bad-format step."""

    thought: str
    action: str | None
    argument: str
    raw: str

    @property
    def ok(self) -> bool:
        return self.action is not None


def _strip_arg(arg: str) -> str:
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "\"'":
        arg = arg[1:-1].strip()
    return arg


def parse_step(text: str) -> Step:
    """The first Thought and the first action of a reply (``Action n: verb[arg]``, or a bare ``verb[arg]``
    line). An unknown verb, no action, or an empty argument is a bad-format step."""
    thought_m = _THOUGHT.search(text)
    thought = thought_m.group(1).strip() if thought_m else ""
    m = _LABELLED.search(text) or _BARE.search(text)
    if not m:
        return Step(thought, None, "", text)
    verb, arg = m.group(1).lower(), _strip_arg(m.group(2))
    if not arg:
        return Step(thought, None, "", text)
    return Step(thought, verb, arg, text)


@dataclass
class _Episode:
    """What one question's trajectory has read: the article shown last, lookup position, evidence."""

    state: SearchState
    current: SnapshotDoc | None = None
    lookup_key: tuple[str, str] | None = None
    lookup_pos: int = 0
    retrieved: dict[str, RetrievedDoc] = field(default_factory=dict)
    evidence: list[Passage] = field(default_factory=list)

    def show(self, doc: SnapshotDoc, shown: list[tuple[int, str]], pid: str) -> str:
        self.current = doc
        self.retrieved.setdefault(doc.name, RetrievedDoc(doc.name, doc.title))
        if shown:
            first, last = shown[0][0], shown[-1][0]
            self.evidence.append(
                Passage(
                    path=doc.name,
                    title=doc.title,
                    text="\n".join(s for _, s in shown),
                    line_start=first + SENTENCE_LINE_OFFSET,
                    line_end=last + SENTENCE_LINE_OFFSET,
                    first_sentence=first,
                    last_sentence=last,
                )
            )
        return fence_passage(pid, doc.title, shown)

    def titles(self, names: list[str]) -> str:
        docs = [self.state.corpus.by_name(n) for n in names]
        return " | ".join(d.title for d in docs if d is not None)

    # -- actions -------------------------------------------------------------------------------------------
    def search(self, query: str, pid: str) -> str:
        ranked = self.state.search(query, OTHER_RESULTS + 2)
        top = self.state.corpus.by_title(query)
        if top is None and ranked:
            top = self.state.corpus.by_name(ranked[0])
        if top is None:
            return f"No results for [{query}]. Try different words."
        others = [n for n in ranked if n != top.name][:OTHER_RESULTS]
        self.lookup_key = None
        shown = [(i, s) for i, s in enumerate(top.sentences) if s][:SEARCH_SENTENCES]
        obs = "Top result:\n" + self.show(top, shown, pid)
        return obs + (f"\nOther results: {self.titles(others)}" if others else "")

    def open(self, title: str, pid: str) -> str:
        doc = self.state.corpus.by_title(title)
        if doc is None:
            similar = self.state.search(title, OTHER_RESULTS + 1)
            hint = f" Similar: {self.titles(similar)}" if similar else ""
            return f"No article titled [{title}].{hint}"
        self.lookup_key = None
        body = [(i, s) for i, s in enumerate(doc.sentences) if s]
        obs = self.show(doc, body[:OPEN_SENTENCES], pid)
        rest = len(body) - OPEN_SENTENCES
        return obs + (f"\n({rest} more sentences; use lookup[keyword] to find one.)" if rest > 0 else "")

    def lookup(self, keyword: str, pid: str) -> str:
        doc = self.current
        if doc is None:
            return "No article has been shown yet; use search[...] or open[...] first."
        needle = keyword.casefold()
        hits = [(i, s) for i, s in enumerate(doc.sentences) if s and needle in s.casefold()]
        if not hits:
            return f"No sentence of {doc.title} contains [{keyword}]."
        key = (doc.name, article_key(keyword))
        if self.lookup_key == key:
            self.lookup_pos += 1
        else:
            self.lookup_key, self.lookup_pos = key, 0
        if self.lookup_pos >= len(hits):
            return f"No more results for [{keyword}] in {doc.title}."
        hit = hits[self.lookup_pos]
        body = self.show(doc, [hit], pid)
        return f"(Result {self.lookup_pos + 1} / {len(hits)})\n{body}"


def _estimate_tokens(messages: list[dict[str, str]]) -> int:
    return int(sum(len(m["content"]) for m in messages) / CHARS_PER_TOKEN) + 4 * len(messages)


class ReActSystem(System):
    name = "react"
    index_free = True

    def __init__(
        self,
        folder: str | Path,
        client: LLMClient,
        *,
        question_timeout_s: float,
        max_tokens: int,
        context_tokens: int,
        max_steps: int = MAX_STEPS,
        search: LiveSearch | None = None,
    ) -> None:
        super().__init__(question_timeout_s=question_timeout_s, max_tokens=max_tokens)
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.folder = Path(folder)
        self.client = client
        self.max_steps = max_steps
        self.context_tokens = context_tokens
        self.search = search or LiveSearch(self.folder)

    def params(self) -> dict[str, Any]:
        return {
            "prompt": "react",
            "max_steps": self.max_steps,
            "step_tokens": STEP_TOKENS,
            "search": "bm25s lucene k1=0.9 b=0.4, in memory over the folder as it is now",
            "search_sentences": SEARCH_SENTENCES,
            "open_sentences": OPEN_SENTENCES,
            "context_tokens": self.context_tokens,
        }

    # -- the loop ------------------------------------------------------------------------------------------
    def _fit(self, messages: list[dict[str, str]]) -> None:
        """Elide the oldest observations (never the last two) until the prompt fits the context window."""
        limit = self.context_tokens - STEP_TOKENS - 64
        obs = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"].startswith("Observation")]
        for i in obs[:-2]:
            if _estimate_tokens(messages) <= limit:
                return
            head = messages[i]["content"].split(":", 1)[0]
            messages[i] = {"role": "user", "content": f"{head}: [elided to fit the context window]"}

    def _room(self, messages: list[dict[str, str]], budget: QuestionBudget) -> bool:
        return budget.tokens + _estimate_tokens(messages) + STEP_TOKENS <= budget.max_tokens

    def _call(self, messages: list[dict[str, str]], budget: QuestionBudget) -> str:
        self._fit(messages)
        resp = self.client.chat(messages, max_tokens=STEP_TOKENS, deadline=budget.deadline, meter=budget.meter)
        return resp.text

    def _answer(self, question: str, budget: QuestionBudget) -> Prediction:
        state, warmup = self.search.current()
        ep = _Episode(state)
        messages = render("react", package=PROMPTS, question=question.strip(), max_steps=str(self.max_steps))
        steps: list[dict[str, Any]] = []
        done: dict[tuple[str, str, str], int] = {}
        bad = 0
        answer: str | None = None
        stop = "step cap"
        error: str | None = None
        try:
            for n in range(1, self.max_steps + 1):
                if not self._room(messages, budget):
                    stop = "token budget"
                    break
                step = parse_step(self._call(messages, budget))
                record: dict[str, Any] = {
                    "step": n,
                    "thought": step.thought,
                    "action": step.action,
                    "argument": step.argument,
                }
                if not step.ok:
                    bad += 1
                    record["raw"] = step.raw[:400]
                    messages.append({"role": "assistant", "content": step.raw.strip()[:400] or "(empty reply)"})
                    obs = FORMAT_HELP.format(n=n)
                elif step.action == "finish":
                    answer, stop = clean_answer(step.argument), "finish"
                    steps.append(record)
                    break
                else:
                    messages.append(
                        {
                            "role": "assistant",
                            "content": f"Thought {n}: {step.thought}\nAction {n}: {step.action}[{step.argument}]",
                        }
                    )
                    obs = getattr(ep, step.action)(step.argument, f"D{n}")
                    key = (step.action, step.argument.casefold(), obs)
                    if key in done:  # a small model may repeat a failing action to the cap: say so once more
                        obs = REPEATED.format(n=done[key]) + obs
                    else:
                        done[key] = n
                record["observation"] = obs[:600]
                steps.append(record)
                messages.append({"role": "user", "content": f"Observation {n}: {obs}"})
            if answer is None:
                messages.append({"role": "user", "content": FORCED_FINISH})
                reply = self._call(messages, budget)
                answer, ok = _forced_answer(reply)
                if not ok:
                    bad += 1
                steps.append({"step": "forced finish", "raw": reply[:400], "ok": ok})
        except RunLevelError:
            raise
        except LLMError as exc:
            error = error_text(exc)
        pred = Prediction(
            system=self.name,
            answer=(answer or "").strip(),
            retrieved=list(ep.retrieved.values()),
            evidence=ep.evidence,
            error=error,
            details={
                "steps": steps,
                "actions": sum(1 for s in steps if s.get("action")),
                "bad_format_steps": bad,
                "forced_finish": stop != "finish",
                "stop": stop,
                "search_warmup_s": round(warmup, 4),
                "corpus_docs": len(state.corpus),
            },
        )
        return self._charge(pred, budget)


def _forced_answer(reply: str) -> tuple[str, bool]:
    """The answer of a forced-finish reply: ``finish[...]`` anywhere; else a short one-line reply that is not
    another action, taken as it is (counted as bad format); else no answer."""
    m = _ANY_FINISH.search(reply)
    if m:
        answer = clean_answer(_strip_arg(m.group(1)))
        return answer, bool(answer)  # a copied placeholder (finish[answer]) is no answer
    if parse_step(reply).ok:  # another search/open/lookup instead of an answer
        return "", False
    line = reply.strip()
    line = re.sub(r"^(final\s+)?answer\s*[:\-]\s*", "", line, flags=re.IGNORECASE)
    if line and "\n" not in line and len(line) <= 80:
        return clean_answer(_strip_arg(line)), False
    return "", False
