"""PaperQA2 (``paper-qa`` on PyPI, MIT) as a benchmark arm: the system people pick for cited answers over their own
documents, run on the same folders with the same model as every other arm.

It needs the optional extra ``paperqa`` (``pip install 'lens-search[paperqa]'``); this module imports PaperQA only
when the arm is asked for. PaperQA runs with its own defaults — pypdf parsing, 5,000-character chunks with 250 of
overlap, ``Docs.aquery``: the 10 chunks nearest the question (MMR, λ = 1) each summarised and scored 0–10 by the
summary LLM, the best 5 with a score of at least 1 in one answer call that cites them — except what must change to
run here, offline:

- **LLM, summary LLM, agent LLM** (the agent is not used: ``Docs.aquery`` is) all point at the run's endpoint —
  the client every other arm uses (``--base-url``, or the embedded server) — through litellm's ``openai/<model>``
  provider with ``api_base``; temperature, seed, most tokens per reply, per-call timeout and retries are the shared
  configuration's (``llm.*``).
- **Embeddings** are local (``ArmSettings.paperqa_embedding``): ``dense`` (default; PaperQA's own default is a dense
  embedding, OpenAI's text-embedding-3-small) is PaperQA's sentence-transformers model over the offline model
  Hybrid-RAG uses (``--dense-model``); ``sparse`` is PaperQA's hashed 256-bucket token embedding (no model);
  ``hybrid`` is both, as PaperQA's ``hybrid-`` embedding.
- **No metadata look-ups** (``parsing.use_doc_details = False``: Crossref, Semantic Scholar, Unpaywall, … are
  network services) and **no multimodal parsing** (``parsing.multimodal = OFF``: its default sends PDF images to an
  enrichment LLM, gpt-4o).
- **Citations are the files' titles**, given to ``Docs.aadd`` (PaperQA otherwise asks the LLM for an MLA citation
  of each document at index time: one call per file, 4,992 on D125); the document key is the file name, so every
  context maps back to its file.
- **Network steps kept local**: ``LITELLM_LOCAL_MODEL_COST_MAP=True`` before litellm is imported (else it fetches
  its price table from GitHub at import), ``LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS=True`` (the same for a header
  table, fetched only for Anthropic models), tiktoken's ``cl100k_base`` read from the copy litellm bundles (litellm
  points ``TIKTOKEN_CACHE_DIR`` at it on import), a local sentence-transformers folder with ``HF_HUB_OFFLINE=1``,
  and PaperQA's ``agent.index.index_directory`` set under the index root (its default creates ``~/.pqa``).

**Index** (``paperqa`` kind, persisted like BM25-RAG's under ``ROOT/<corpus checksum>/paperqa-<tag>/``): every
regular, non-hidden file of the folder through ``Docs.aadd`` — PDFs by pages, extensionless text files (a snapshot's
articles) by lines, as PaperQA reads a file with no known suffix, so nothing is copied or renamed and the folder is
never written —, then the vector index filled, all pickled with the file titles. Files PaperQA cannot read
(empty, too short to pass its text check, a format it lacks a parser for) are skipped and counted by reason, as its
own index builder does. Build seconds, bytes on disk and peak memory are the lifecycle's (:class:`IndexBuild`).

**Row**: the answer is PaperQA's, its context keys taken out (``(pqac-…)``; the formatted answer with document names
is kept in ``details``). Retrieved documents are the contexts placed in the answer prompt, in PaperQA's order: a
PDF chunk is every page of its range (``<file>#u<page>`` with ``location = {"page": p}``, as LENS names a page); a
text file is the file, titled by its first line (so Ev.Rec is computed as for every arm). The evidence passages are
those chunks' text; ``details`` lists every context (score, summary, in the prompt, cited by the answer). Tokens
and calls are counted per call from the responses (and PaperQA's own ``token_counts`` kept beside them); the
question's wall-clock cap (``budget.question_timeout_s``) bounds the whole query.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from pydantic import PrivateAttr

from harness.bench.datasets import DataError, shard_files
from harness.bench.snapshots import title_from_file_name
from harness.bench.systems.base import QuestionBudget, RunLevelError, SetupError, System
from harness.bench.systems.corpus import SnapshotCorpus, read_snapshot_doc
from harness.bench.systems.indexes import IndexBuild, IndexStore, model_tag
from harness.bench.systems.prediction import Passage, Prediction, RetrievedDoc
from harness.files import sha256_file
from harness.retrieval import DenseEncoder, IndexFolderError, default_model_path

__all__ = [
    "EMBEDDINGS",
    "INDEX_KIND",
    "PaperQAIndex",
    "PaperQASystem",
    "clean_answer",
    "ensure_paperqa_index",
    "load_paperqa_index",
    "offline_environment",
    "paperqa_version",
]

INDEX_KIND = "paperqa"
EMBEDDINGS = ("dense", "sparse", "hybrid")
PICKLE = "docs.pickle"
EXTRA_HINT = "install the optional extra: pip install 'lens-search[paperqa]'"
# set before litellm is imported: each stops a download (see the module docstring)
OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True"}
_QUIET_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "lmi", "paperqa", "aviary")
_CONTEXT_KEY = re.compile(r"\s*\((?=[^()]*\bpqac-[0-9a-z]+)[^()]*\)")
_RANGE = re.compile(r"\b(pages|lines) (\d+)-(\d+)$")
_DOCNAME = re.compile(r"[^A-Za-z0-9]+")
_REQUEST_LEVEL = frozenset({400, 413, 422})
_ENDPOINT_LEVEL = frozenset({401, 403, 404, 408, 409, 429})


def offline_environment() -> None:
    """Set what keeps litellm from downloading at import (call before the first import of paperqa or litellm)."""
    os.environ.update(OFFLINE_ENV)


_LOAD_LOCK = threading.Lock()
_MODULES: dict[str, Any] = {}


def _paperqa() -> dict[str, Any]:
    """PaperQA and its LLM layer, imported once, offline, quiet; raises SetupError without the extra."""
    with _LOAD_LOCK:
        if not _MODULES:
            offline_environment()
            try:
                import litellm
                import lmi
                import paperqa
                from paperqa.settings import MultimodalOptions
            except ImportError as exc:
                raise SetupError(f"the paperqa arm needs PaperQA2 ({exc}); {EXTRA_HINT}") from exc
            litellm.suppress_debug_info = True  # its "Provider List" banners go to stdout
            # a question cut short (a failed call, the time cap) leaves PaperQA's queued summaries unstarted
            warnings.filterwarnings("ignore", message="coroutine 'map_fxn_summary' was never awaited")
            for name in _QUIET_LOGGERS:  # failures are in the rows; their tracebacks would bury the progress bar
                logging.getLogger(name).setLevel(logging.CRITICAL)
            _MODULES.update(
                paperqa=paperqa,
                litellm=litellm,
                lmi=lmi,
                multimodal_off=MultimodalOptions.OFF,
                version=paperqa.__version__,
                metered=_metered_model_class(lmi),
            )
        return _MODULES


def _metered_model_class(lmi: Any) -> type:
    """PaperQA's litellm model, counting each call into the question's meter (tokens from the response) and each
    call that failed for good by why (endpoint, request, unreachable)."""

    class MeteredLiteLLMModel(lmi.LiteLLMModel):
        _calls: Any = PrivateAttr(default=None)

        async def acompletion(self, messages: Any, *, spec: Any = None, **kwargs: Any) -> Any:
            # lmi re-sends a call llm.max_retries times; under litellm the OpenAI SDK would re-send each attempt
            # twice more on its own (its default), so an attempt is one request here, as for every other arm
            return await super().acompletion(messages, spec=spec, **{**kwargs, "max_retries": 0})

        async def call_single(self, *args: Any, **kwargs: Any) -> Any:
            t0 = time.monotonic()
            try:
                result = await super().call_single(*args, **kwargs)
            except Exception as exc:
                self._calls.failed(exc, time.monotonic() - t0)
                raise
            self._calls.meter.add(
                prompt_tokens=int(result.prompt_count or 0),
                completion_tokens=int(result.completion_count or 0),
                cache_hit=False,
                seconds=time.monotonic() - t0,
            )
            return result

    return MeteredLiteLLMModel


def _root(exc: BaseException) -> BaseException:
    """The failure under lmi's wrapper (``AllModelsExhaustedError`` holds the last attempt's)."""
    while type(exc).__name__ == "AllModelsExhaustedError" and exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def failure_kind(exc: BaseException) -> tuple[str, int | None]:
    """Why one call failed for good: ``unreachable`` (no connection), ``endpoint`` (timeouts, 429, 5xx, auth,
    unknown model), ``request`` (HTTP 400/413/422: this request) or ``other``; and the HTTP status if any."""
    chain = _chain(exc)
    if any(isinstance(e, openai.APITimeoutError) or type(e).__name__ == "Timeout" for e in chain):
        return "endpoint", None
    if any(isinstance(e, (openai.APIConnectionError, ConnectionError)) for e in chain):
        return "unreachable", None
    status = next((s for e in chain if isinstance(s := getattr(e, "status_code", None), int)), None)
    if status is None:
        return "other", None
    if status in _REQUEST_LEVEL:
        return "request", status
    if status >= 500 or status in _ENDPOINT_LEVEL:
        return "endpoint", status
    return "other", status


class _Calls:
    """One question's LLM calls: the meter (tokens, calls, failures) and the kinds of the calls that failed."""

    def __init__(self, meter: Any, api_key: str | None) -> None:
        self.meter = meter
        self.kinds: list[str] = []
        self._key = api_key
        self._lock = threading.Lock()

    def said(self, exc: BaseException) -> str:
        text = " ".join(str(_root(exc)).split())[:300]
        return text.replace(self._key, "[API key redacted]") if self._key else text

    def failed(self, exc: BaseException, seconds: float) -> None:
        kind, status = failure_kind(exc)
        with self._lock:
            self.kinds.append(kind)
        msg = self.said(exc)
        self.meter.add_failure(seconds)
        self.meter.add_error(
            msg,
            endpoint=kind in ("endpoint", "unreachable"),
            rejected=f"HTTP {status}: {msg}" if kind == "request" else None,
        )

    @property
    def unreachable(self) -> bool:
        """Every call failed because the endpoint could not be reached, and none answered."""
        return bool(self.kinds) and all(k == "unreachable" for k in self.kinds) and not self.meter.cost.oracle_calls


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Endpoint:
    """Where PaperQA's LLM calls go and how: the shared client's endpoint and the shared LLM settings."""

    base_url: str
    model: str
    api_key: str | None
    temperature: float
    seed: int
    max_tokens: int
    timeout_s: float
    retries: int

    @classmethod
    def of(cls, client: Any, config: Any) -> "Endpoint":
        s = config.llm
        return cls(
            base_url=client.base_url,
            model=client.model,
            api_key=os.environ.get(s.api_key_env) or None,
            temperature=s.temperature,
            seed=s.seed,
            max_tokens=s.max_output_tokens,
            timeout_s=s.call_timeout_s,
            retries=s.max_retries,
        )

    def litellm_config(self) -> dict[str, Any]:
        name = f"openai/{self.model}"
        params = {
            "model": name,
            "api_base": self.base_url,
            "api_key": self.api_key or "no-key",
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout_s,
            "max_retries": self.retries,
        }
        return {"name": name, "model_list": [{"model_name": name, "litellm_params": params}]}


def embedding_spec(embedding: str, dense_model: str | None) -> tuple[str, str]:
    """(PaperQA's embedding string, a stable id of it) for ``dense`` / ``sparse`` / ``hybrid``."""
    if embedding not in EMBEDDINGS:
        raise DataError(f"paperqa embedding {embedding!r}: choose from {', '.join(EMBEDDINGS)}")
    if embedding == "sparse":
        return "sparse", "sparse-256"
    model = dense_model or default_model_path()
    if Path(model).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder never needs the hub
    ident = DenseEncoder(model).model_id
    return (f"st-{model}", f"st:{ident}") if embedding == "dense" else (f"hybrid-st-{model}", f"hybrid:{ident}")


def paperqa_settings(endpoint: Endpoint | None, embedding: str, work_dir: str | os.PathLike[str], folder: str) -> Any:
    """PaperQA's ``Settings``: its defaults, but for the offline changes of the module docstring. Without an
    endpoint (an index build: no LLM call is made) the LLMs stay unset."""
    pq = _paperqa()
    llm: dict[str, Any] = {}
    if endpoint is not None:
        cfg = endpoint.litellm_config()
        llm = dict(
            llm=cfg["name"],
            llm_config=cfg,
            summary_llm=cfg["name"],
            summary_llm_config=cfg,
            temperature=endpoint.temperature,
        )
    agent = {"index": {"paper_directory": folder, "index_directory": str(work_dir)}}
    if endpoint is not None:
        agent.update(agent_llm=llm["llm"], agent_llm_config=llm["llm_config"])
    parsing: dict[str, Any] = {"use_doc_details": False, "multimodal": pq["multimodal_off"]}
    if endpoint is not None:
        parsing.update(enrichment_llm=llm["llm"], enrichment_llm_config=llm["llm_config"])
    return pq["paperqa"].Settings(embedding=embedding, parsing=parsing, agent=agent, **llm)


def settings_params(settings: Any) -> dict[str, Any]:
    """The PaperQA settings that shape an answer (they enter the arm's hash)."""
    a, p = settings.answer, settings.parsing
    return {
        "evidence_k": a.evidence_k,
        "evidence_relevance_score_cutoff": a.evidence_relevance_score_cutoff,
        "evidence_summary_length": a.evidence_summary_length,
        "answer_max_sources": a.answer_max_sources,
        "answer_length": a.answer_length,
        "max_concurrent_requests": a.max_concurrent_requests,
        "mmr_lambda": settings.texts_index_mmr_lambda,
        "use_json": settings.prompts.use_json,
        "chunk_chars": p.reader_config.get("chunk_chars"),
        "overlap": p.reader_config.get("overlap"),
        "multimodal": "off",
        "use_doc_details": p.use_doc_details,
    }


# --------------------------------------------------------------------------- index


def _files(folder: Path) -> list[str]:
    """The folder's regular, non-hidden files (a snapshot is flat), sorted by UTF-8 name."""
    try:
        entries = list(os.scandir(folder))
    except OSError as exc:
        raise DataError(f"{folder}: cannot list: {exc.strerror or exc}") from None
    names = sorted(
        (e.name for e in entries if not e.name.startswith(".") and e.is_file(follow_symlinks=False)),
        key=lambda n: n.encode("utf-8", "surrogatepass"),
    )
    if not names and shard_files(folder):
        raise DataError(f"{folder}: a pool of article shards; the paperqa arm reads a folder of document files")
    return names


def _is_pdf(name: str) -> bool:
    return name.lower().endswith(".pdf")


def file_title(folder: Path, name: str) -> str:
    """A text file's title line; a PDF's Title metadata when it reads as one, else the title its name encodes."""
    if not _is_pdf(name):
        doc = read_snapshot_doc(folder, name)
        return doc.title if doc is not None else name
    title = ""
    try:
        import pypdf

        title = str((pypdf.PdfReader(folder / name).metadata or {}).get("/Title") or "").strip()
    except Exception:  # a broken PDF: PaperQA's own parse will say so
        title = ""
    if title and len(title) <= 200 and any(c.isalpha() for c in title) and not title.lower().startswith("untitled"):
        return title
    return title_from_file_name(name[:-4])


@dataclass
class PaperQAIndex:
    """PaperQA's document collection over one folder, and the file titles its contexts map to."""

    docs: Any  # paperqa.Docs
    titles: dict[str, str]
    embedding_id: str
    version: str
    skipped: dict[str, int] = field(default_factory=dict)
    index_hash: str = ""
    path: str = ""  # the index folder it was loaded from (not persisted)

    @property
    def n_docs(self) -> int:
        return len(self.docs.docs)


def paperqa_version() -> str:
    return _paperqa()["version"]


def index_folder(store: IndexStore, corpus_checksum: str, embedding: str, dense_model: str | None) -> Path:
    """Where the collection of that corpus lives: one folder per embedding and PaperQA version."""
    _, emb_id = embedding_spec(embedding, dense_model)
    return store.folder(INDEX_KIND, corpus_checksum, model_tag(f"{emb_id}-pqa{paperqa_version()}"))


def build_paperqa_index(
    store: IndexStore, corpus: SnapshotCorpus, embedding: str, dense_model: str | None
) -> tuple[PaperQAIndex, IndexBuild]:
    """Index every file of ``corpus.folder`` with ``Docs.aadd`` (no LLM call) and persist it."""
    pq = _paperqa()
    emb, emb_id = embedding_spec(embedding, dense_model)
    final = index_folder(store, corpus.checksum, embedding, dense_model)
    folder = Path(corpus.folder)

    def make(tmp: Path) -> tuple[PaperQAIndex, dict[str, Any]]:
        settings = paperqa_settings(None, emb, tmp / "pqa", str(folder))
        index = asyncio.run(_add_files(pq, settings, folder, emb_id))
        with open(tmp / PICKLE, "wb") as fh:
            pickle.dump(index, fh, protocol=pickle.HIGHEST_PROTOCOL)
        index.index_hash = sha256_file(tmp / PICKLE)
        params = {
            "paperqa": pq["version"],
            "embedding": emb_id,
            "chunks": len(index.docs.texts),
            "skipped": index.skipped,
            "citations": "file title",
            **settings_params(settings),
        }
        return index, params

    index, build = store.build_kind(INDEX_KIND, corpus, final, make)
    index.path = str(final)
    return index, build


async def _add_files(pq: dict[str, Any], settings: Any, folder: Path, emb_id: str) -> PaperQAIndex:
    docs = pq["paperqa"].Docs()
    embedding_model = settings.get_embedding_model()
    titles: dict[str, str] = {}
    skipped: dict[str, int] = {}
    for name in _files(folder):
        title = file_title(folder, name)
        docname = _DOCNAME.sub("", Path(name).stem if _is_pdf(name) else name)[:40] or "doc"
        try:
            added = await docs.aadd(
                folder / name,
                citation=title,
                docname=docname,
                dockey=name,
                settings=settings,
                embedding_model=embedding_model,
            )
        except Exception as exc:  # PaperQA cannot read it: skipped by reason, as its own indexer does
            reason = type(exc).__name__
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        if added:
            titles[name] = title
    await docs.texts_index.add_texts_and_embeddings(docs.texts)
    return PaperQAIndex(docs, titles, emb_id, pq["version"], skipped)


def load_paperqa_index(
    store: IndexStore, corpus_checksum: str, embedding: str, dense_model: str | None
) -> tuple[PaperQAIndex, IndexBuild] | None:
    """The persisted index of that corpus, or ``None`` when none was built; IndexFolderError when it was altered."""
    final = index_folder(store, corpus_checksum, embedding, dense_model)
    build = store.record_of(final, corpus_checksum)
    if build is None:
        return None
    path = final / PICKLE
    if not path.is_file() or sha256_file(path) != build.index_hash:
        raise IndexFolderError(f"{path}: does not match its build record (altered or incomplete); delete {final}")
    with open(path, "rb") as fh:
        index = pickle.load(fh)  # written by build_paperqa_index into this index root; its sha256 checked above
    # PaperQA's vector store remembers its chunks by Python hash(), which is salted per process: with the hashes
    # of the building process every chunk looks new to the first query, is added again and comes back twice
    vectors = index.docs.texts_index
    vectors.texts_hashes = {hash(t) for t in vectors.texts}
    index.path = str(final)
    return index, build


def ensure_paperqa_index(
    store: IndexStore, corpus: SnapshotCorpus, embedding: str, dense_model: str | None
) -> tuple[PaperQAIndex, IndexBuild, bool]:
    """(index, its build record, built now?)"""
    got = load_paperqa_index(store, corpus.checksum, embedding, dense_model)
    if got is not None:
        return got[0], got[1], False
    index, build = build_paperqa_index(store, corpus, embedding, dense_model)
    return index, build, True


# --------------------------------------------------------------------------- answers


def clean_answer(raw: str) -> str:
    """PaperQA's raw answer without its context keys (``(pqac-1a2b3c4d)``, ``(pqac-…, pqac-…)``)."""
    text = _CONTEXT_KEY.sub("", raw)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return " ".join(text.split())


def _range(context: Any) -> tuple[str, int, int] | None:
    """(``pages`` | ``lines``, first, last) of a context's chunk, from PaperQA's chunk name."""
    m = _RANGE.search(context.text.name)
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


class PaperQASystem(System):
    """``Docs.aquery`` over the persisted collection; see the module docstring."""

    name = "paperqa"
    index_free = False

    def __init__(
        self,
        index: PaperQAIndex,
        build: IndexBuild,
        folder: str | os.PathLike[str],
        config: Any,
        client: Any,
        *,
        embedding: str,
        dense_model: str | None,
        question_timeout_s: float,
        max_tokens: int,
    ) -> None:
        super().__init__(question_timeout_s=question_timeout_s, max_tokens=max_tokens)
        self.index, self.build = index, build
        self.folder = Path(folder)
        self.config, self.client = config, client
        self.embedding, self.dense_model = embedding, dense_model
        self._ready: tuple[Any, Any, Endpoint] | None = None  # (settings, embedding model, endpoint), built lazily
        # PaperQA's agent index folder: named so that its default (~/.pqa) is never created; Docs.aquery never uses it
        self._work_dir = Path(index.path) / "pqa"
        self._lock = threading.Lock()

    def params(self) -> dict[str, Any]:
        pq = _paperqa()
        defaults = paperqa_settings(None, "sparse", self._work_dir, str(self.folder))
        return {
            "paperqa": pq["version"],
            "query": "Docs.aquery",
            "embedding": self.index.embedding_id,
            "citations": "file title",
            "answer": "raw answer without context keys",
            "retrieved": "contexts in the answer prompt (PDF: every page of their ranges)",
            **settings_params(defaults),
            "index_hash": self.build.index_hash,
            "index_corpus_checksum": [self.build.corpus_checksum],
        }

    def _setup(self) -> tuple[Any, Any, Endpoint]:
        """Settings and embedding model, on the first question (a remote run's driver never asks one)."""
        with self._lock:
            if self._ready is None:
                endpoint = Endpoint.of(self.client, self.config)
                emb, _ = embedding_spec(self.embedding, self.dense_model)
                settings = paperqa_settings(endpoint, emb, self._work_dir, str(self.folder))
                self._ready = (settings, settings.get_embedding_model(), endpoint)
            return self._ready

    def _answer(self, question: str, budget: QuestionBudget) -> Prediction:
        pq = _paperqa()
        settings, embedding_model, endpoint = self._setup()
        calls = _Calls(budget.meter, endpoint.api_key)
        model = pq["metered"](name=settings.llm, config=settings.llm_config)
        model._calls = calls
        pred = Prediction(system=self.name, answer="")
        query = self.index.docs.aquery(
            question, settings=settings, llm_model=model, summary_llm_model=model, embedding_model=embedding_model
        )
        try:
            session = asyncio.run(asyncio.wait_for(query, timeout=max(budget.time_left(), 0.5)))
        except asyncio.TimeoutError:
            if budget.time_left() > 0.5:  # not the question's deadline: a failure inside PaperQA
                raise
            pred.error = f"LLMDeadlineError: the question's time budget ({self.question_timeout_s:.0f} s) ran out"
            return self._charge(pred, budget)
        except Exception as exc:
            if calls.unreachable:
                raise RunLevelError(f"cannot reach {endpoint.base_url}: {calls.said(exc)}") from None
            pred.error = f"{type(_root(exc)).__name__}: {calls.said(exc)}"
            return self._charge(pred, budget)
        if calls.unreachable:
            raise RunLevelError(f"cannot reach {endpoint.base_url}")
        return self._charge(self._prediction(pred, session, settings), budget)

    def _prediction(self, pred: Prediction, session: Any, settings: Any) -> Prediction:
        pred.answer = clean_answer(session.raw_answer)
        ranked = sorted(session.contexts, key=lambda c: (-c.score, c.text.name))
        shown = [c for c in ranked if c.id in session.context]  # the contexts the answer prompt holds
        cited = session.used_contexts
        for c in shown:
            name = c.text.doc.dockey
            title = self.index.titles.get(name, name)
            span = _range(c)
            if span is not None and span[0] == "pages" and _is_pdf(name):
                pages = range(span[1], span[2] + 1)
                for p in pages:
                    doc = RetrievedDoc(f"{name}#u{p}", title, {"page": p})
                    if doc not in pred.retrieved:
                        pred.retrieved.append(doc)
                location = {"page": span[1]} if span[1] == span[2] else {"page": span[1], "last_page": span[2]}
                pred.evidence.append(Passage(path=name, title=title, text=c.text.text, location=location))
                continue
            if RetrievedDoc(name, title) not in pred.retrieved:
                pred.retrieved.append(RetrievedDoc(name, title))
            lines = (span[1] + 1, span[2] + 1) if span is not None and span[0] == "lines" else (None, None)
            pred.evidence.append(Passage(name, title, c.text.text, line_start=lines[0], line_end=lines[1]))
        pred.details = {
            "paperqa_answer": session.answer,
            "contexts": [
                {
                    "id": c.id,
                    "file": c.text.doc.dockey,
                    "chunk": c.text.name,
                    "score": c.score,
                    "in_prompt": c in shown,
                    "cited": c.id in cited,
                    "summary": c.context,
                }
                for c in ranked
            ],
            "cited_files": sorted({c.text.doc.dockey for c in ranked if c.id in cited}),
            "paperqa_token_counts": {k: list(v) for k, v in session.token_counts.items()},
        }
        return pred
