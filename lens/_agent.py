"""The LENS agent: decompose → prior → explore → answer → record, one stage per module.

Data flows one way: the folder is scanned as it is now; the requirements come from one budgeted call
(``_requirements``); the prior, reading the warm-reuse memory through the caller's eligibility predicate, seeds
the beliefs and the loop spends the round budget (``_loop``); the answer stage consolidates E*, re-enters the loop
once for a fact reported missing and synthesises (``_answer``); the record stage appends confirmed evidence to the
memory and assembles the result (``_record``). The agent's only tools are read-only: nothing in a document can
make it write, delete, or call anything else.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Sequence

from lens._config import LensConfig, load_config
from lens._errors import LensError
from lens._files import is_inside
from lens._progress import ProgressCallback
from lens._result import AskResult
from lens.answer._answer import Answered, answer, consolidated
from lens.llm._cost import CostMeter
from lens.llm._llm import LLMClient, open_client
from lens.loop._budget import Budget
from lens.loop._loop import Loop, Observer, assemble_loop, explore
from lens.loop._run import QuestionRun
from lens.memory._memory import Eligibility, MemoryLogError, MemoryStore, all_past, memory_key, memory_signals
from lens.memory._record import record as record_stage
from lens.memory._record import result, statuses
from lens.prior._prior import Prior
from lens.question._requirements import Decomposition, decompose
from lens.reader._corpus import CorpusScan
from lens.reader._filestats import survey_corpus, write_held
from lens.reader._view import CorpusView

__all__ = ["Agent", "ask", "Cancelled", "MAX_QUESTION_CHARS", "Pipeline"]

# a question is one or a few sentences (HotpotQA's longest: 223 characters); a longer one is refused up front
# rather than costing the prior and the prompts time and tokens in proportion to its length
MAX_QUESTION_CHARS = 4000


class Cancelled(LensError):
    """The question was cancelled (``Agent.ask(cancel=event)``, the event set): raised instead of its next LLM
    call, so the call in flight is the last one made."""


class _CancellableClient:
    """An LLM client for one question: each call first checks that the question was not cancelled."""

    def __init__(self, client: LLMClient, cancel: threading.Event) -> None:
        self._client = client
        self._cancel = cancel

    def __getattr__(self, name: str) -> Any:  # model, base_url, settings, …: the wrapped client's
        return getattr(self._client, name)

    def _check(self) -> None:
        if self._cancel.is_set():
            raise Cancelled("the question was cancelled")

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return self._client.chat(*args, **kwargs)

    def chat_json(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        # the client's own chat_json with this object as ``self``: its repair request also comes through chat
        return type(self._client).chat_json(self, *args, **kwargs)


@dataclass(frozen=True)
class Pipeline:
    """The stages a question runs, chosen once from the configuration: the ablations are choices made here."""

    memory: bool  # the warm-reuse memory is read (and written)
    lexical_prior: bool  # the prior is BM25 alone: no title, layout, link-hop or memory signal
    explore: bool  # the propose–observe–update loop runs (else E* is the prior's windows)

    @classmethod
    def of(cls, config: LensConfig) -> Pipeline:
        a = config.ablation
        return cls(
            memory=config.memory.enabled and not a.no_memory,
            lexical_prior=a.lexical_only_prior,
            explore=not a.no_exploration,
        )


class Agent:
    """Answers questions over folders with one configuration, one LLM client and an optional memory.

    Thread-safe for concurrent ``ask`` calls: per-question state lives in the call. ``progress`` is called with
    a :class:`~lens._progress.Progress` snapshot as each stage of a question starts and when it ends. ``within``:
    real paths of the only folders a question may read (checked on the folder as the scan opens it); None: any.
    """

    def __init__(
        self,
        config: LensConfig | None = None,
        *,
        client: LLMClient | None = None,
        memory: MemoryStore | None = None,
        progress: ProgressCallback | None = None,
        within: Sequence[str | os.PathLike[str]] | None = None,
    ):
        self.config = config or load_config()
        self._client = client
        self.memory = memory
        self.progress = progress
        self.within = within

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            self._client = open_client(self.config)
        return self._client

    def ask(
        self,
        question: str,
        path: str | os.PathLike[str],
        *,
        eligible: Eligibility | None = None,
        position: int | None = None,
        record: bool = True,
        cancel: threading.Event | None = None,
    ) -> AskResult:
        """Answer ``question`` from the folder ``path`` as it is now.

        ``eligible`` selects which memory entries may be read (default: every earlier entry); ``position`` is
        this query's stream position (default: next in the memory log); ``record`` appends confirmed evidence
        to the memory; ``cancel``: once set, the question stops before its next LLM call (:class:`Cancelled`).
        Raises LensError for an empty question or one over ``MAX_QUESTION_CHARS``, CorpusError for an unusable
        folder, LLMError when the LLM is unreachable and Cancelled when cancelled.
        """
        pipeline = Pipeline.of(self.config)
        run, scan, view = self._open(question, path, cancel)
        decomposition = decompose(question, partial(run.fixed_call, keep=1, stage="decomposition"))
        loop, pos, memory = self._prime(run, view, decomposition, pipeline, eligible=eligible, position=position)
        stop = explore(run, loop, enabled=pipeline.explore)
        answered = answer(run, loop, stop, self.config, may_reenter=pipeline.explore)
        store = memory if record else None
        return record_stage(run, scan, loop, answered, self.config, memory=store, position=pos)

    def explore(
        self,
        question: str,
        path: str | os.PathLike[str],
        *,
        decomposition: Decomposition | None = None,
        observer: Observer | None = None,
    ) -> AskResult:
        """The loop without an answer: the requirements (``decomposition``, else the LLM's), the prior, the
        propose–observe–update loop — observed by ``observer`` instead of the LLM when given (a simulated oracle;
        with both no LLM is touched) — and E*. No synthesis and no memory write; ``answer`` is empty and
        ``best_effort`` says whether every requirement certified."""
        pipeline = Pipeline.of(self.config)
        run, scan, view = self._open(question, path)
        if decomposition is None:
            decomposition = decompose(question, partial(run.fixed_call, keep=1, stage="decomposition"))
        loop, _, _ = self._prime(run, view, decomposition, pipeline, observer=observer)
        stop = explore(run, loop, enabled=pipeline.explore)
        certified = loop.certified()
        explored = Answered("", stop, certified, consolidated(loop, certified, self.config))
        status = statuses(loop.state, explored)
        return result(run, scan, loop, explored, status, self.config, best_effort=len(certified) < len(status))

    # ------------------------------------------------------------------ the stages' inputs
    def _open(
        self, question: str, path: str | os.PathLike[str], cancel: threading.Event | None = None
    ) -> tuple[QuestionRun, CorpusScan, CorpusView]:
        """The question checked, its budget opened and the folder scanned as it is now."""
        cfg = self.config
        _check(question, cfg, path)
        meter = CostMeter()
        run = QuestionRun(
            question,
            time.monotonic(),
            meter,
            Budget(cfg.budget, meter),
            cfg.llm,
            (lambda: self.client) if cancel is None else (lambda: _CancellableClient(self.client, cancel)),
            progress=self.progress,
        )
        run.report("scan")
        scan = survey_corpus(path, cfg.reader, within=self.within)
        if not scan.documents:
            raise LensError(f"{path}: no readable documents (skipped: {dict(scan.skipped) or 'none'})")
        if scan.ignore_unread:  # files the user meant to exclude may be read: said with the answer
            run.notes.append(scan.ignore_unread)
        write_held(scan)  # what the survey held (term counts, a first survey's rows), written during the first LLM call
        return run, scan, CorpusView.of(scan)

    def _prime(
        self,
        run: QuestionRun,
        view: CorpusView,
        decomposition: Decomposition,
        pipeline: Pipeline,
        *,
        eligible: Eligibility | None = None,
        position: int | None = None,
        observer: Observer | None = None,
    ) -> tuple[Loop, int, MemoryStore | None]:
        """The loop over the prior, with the memory's signal when the pipeline reads it; (loop, stream position,
        the memory to write or None)."""
        cfg = self.config
        memory = self.memory if pipeline.memory else None
        signal: dict[str, dict[int, float]] = {}
        try:
            pos = position if position is not None else (self.memory.next_position() if self.memory else 0)
            if memory is not None:
                signal = self._read_memory(run, memory, decomposition, view, eligible or all_past(pos))
        except MemoryLogError as exc:  # an unreadable memory costs its signal, never the question
            run.notes.append(f"memory: {exc}; answered without it, and nothing was written to it")
            run.stages.append({"stage": "memory", "error": str(exc)})
            pos, memory, signal = position or 0, None, {}
        loop = assemble_loop(
            run.question,
            decomposition,
            Prior(view, cfg.prior, lexical_only=pipeline.lexical_prior, deadline=run.budget.deadline),
            cfg,
            client=run.client() if observer is None else self._client,
            meter=run.meter,
            budget=run.budget,
            memory_signal=signal,
            observer=observer,
            on_round=partial(run.report, "round"),
        )
        run.detail = loop.progress_detail  # every report from here on carries the search so far
        calibrated = cfg.llm.served_model in cfg.loop.reading_model
        run.stages.append({"stage": "reading-model", "calibrated": calibrated, "n": loop.model.n})
        return loop, pos, memory

    def _read_memory(
        self,
        run: QuestionRun,
        memory: MemoryStore,
        decomposition: Decomposition,
        view: CorpusView,
        eligible: Eligibility,
    ) -> dict[str, dict[int, float]]:
        """Per requirement, the prior's memory signal from the eligible, similar, unchanged entries."""
        keys = {req.id: memory_key(run.question, req.text) for req in decomposition.requirements}
        signals, stale = memory_signals(memory, keys, view, eligible, self.config.memory.capacity)
        if stale:
            run.notes.append(f"memory: {stale} stale entries ignored (file changed or gone)")
        run.stages.append(
            {
                "stage": "memory",
                "served": sum(len(s) for s in signals.values()),  # documents signalled, summed over requirements
                "requirements_served": len(signals),
                "stale": stale,
            }
        )
        return signals


def ask(question: str, path: str | os.PathLike[str], *, config: LensConfig | None = None, **kwargs: Any) -> AskResult:
    """One-shot convenience: ``Agent(config).ask(question, path, ...)``."""
    return Agent(config).ask(question, path, **kwargs)


def _check(question: str, cfg: LensConfig, path: str | os.PathLike[str]) -> None:
    if not question or not question.strip():
        raise LensError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise LensError(f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (a "\ud800" JSON escape): no request can carry it
        raise LensError(f"the question is not valid Unicode: a lone surrogate at character {exc.start + 1}") from None
    if cfg.llm.cache and cfg.llm.cache_dir and is_inside(cfg.llm.cache_dir, path):
        raise LensError(
            f"llm.cache_dir {cfg.llm.cache_dir}: inside the document folder {path}; lens never writes there"
        )
