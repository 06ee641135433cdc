"""The arms by name, and how to build them from plain, picklable settings.

Beside the five systems of the paper: ``bm25-span`` (BM25-RAG whose answer LENS shortens to a span of the
evidence, ``lens.answer_span``: the control that shows how much of a gain is formatting alone) and
``gold-passages`` (one answer call over the question's gold supporting paragraphs with the BM25-RAG prompt: the
reading ceiling). ``gold-passages`` uses labels (``uses_gold``): the report never puts it in a headline table or
a significance test.

``ArmSettings`` and ``ArmPlan`` are plain data, so a plan can be shipped to any worker (a thread here; a Ray
actor or another machine later) which then calls :func:`build_systems` to get its own arms over its own LLM
client. Indexes are prepared once by the driver (:func:`prepare_indexes`: build if missing, with the lifecycle
measurements) and only loaded by workers.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.datasets import DataError
from harness.bench.systems import paperqa_arm
from harness.bench.systems.base import System
from harness.bench.systems.closed_book import ClosedBookSystem
from harness.bench.systems.corpus import SnapshotCorpus
from harness.bench.systems.indexes import IndexBuild, IndexStore
from harness.bench.systems.lens_arm import LensSystem
from harness.bench.systems.rag import PASSAGE_CHARS, BM25Retriever, GoldRetriever, HybridRetriever, RAGSystem
from harness.bench.systems.react import ReActSystem
from harness.retrieval import DenseEncoder, IndexFolderError

__all__ = [
    "SYSTEM_NAMES",
    "INDEX_KINDS",
    "ArmSettings",
    "ArmPlan",
    "parse_systems",
    "index_free",
    "reads_corpus",
    "uses_gold",
    "USES_GOLD",
    "prepare_indexes",
    "build_systems",
]

SYSTEM_NAMES = ("lens", "react", "bm25", "bm25-span", "hybrid", "closed", "gold-passages", "paperqa")
# persisted indexes; "paperqa": PaperQA2's document collection (the optional extra "paperqa")
INDEX_KINDS = {"bm25": ("bm25",), "bm25-span": ("bm25",), "hybrid": ("bm25", "dense"), "paperqa": ("paperqa",)}
_INDEX_FREE = {
    "lens": True,
    "react": True,
    "bm25": False,
    "bm25-span": False,
    "hybrid": False,
    "closed": True,
    "gold-passages": True,
    "paperqa": False,
}
_READS_CORPUS = {n: n != "closed" for n in SYSTEM_NAMES}
USES_GOLD = frozenset({"gold-passages"})  # arms that read labels: never in a headline table or a test


def parse_systems(text: str) -> tuple[str, ...]:
    """``"lens,bm25"`` → ("lens", "bm25") in the canonical order; raises DataError for an unknown name."""
    names = [s.strip().lower() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in SYSTEM_NAMES]
    if unknown or not names:
        raise DataError(
            f"--systems {text!r}: unknown {', '.join(unknown) or '(none given)'}; choose from {','.join(SYSTEM_NAMES)}"
        )
    return tuple(n for n in SYSTEM_NAMES if n in names)


def index_free(name: str) -> bool:
    return _INDEX_FREE[name]


def reads_corpus(name: str) -> bool:
    return _READS_CORPUS[name]


def uses_gold(name: str) -> bool:
    return name in USES_GOLD


@dataclass(frozen=True)
class ArmSettings:
    """Settings of the baselines beyond the shared LLM configuration (each enters the arm's hash)."""

    k: int = 5  # RAG: documents in the answer prompt
    react_steps: int = 7
    hybrid_depth: int = 200
    rrf_k: int = 60
    paperqa_embedding: str = "dense"  # PaperQA2: "dense" (the dense_model model), "sparse" or "hybrid"
    dense_model: str | None = None  # a sentence-transformers name or folder; None = the offline default
    passage_chars: int = PASSAGE_CHARS  # RAG: most characters of one document placed in the prompt

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ArmPlan:
    """Everything a worker needs to build the arms: plain data."""

    names: tuple[str, ...]
    folder: str  # the corpus read at query time
    index_root: str
    index_checksum: str | None  # corpus the persisted indexes cover (the "from" corpus in the stale arm)
    settings: ArmSettings = field(default_factory=ArmSettings)
    # gold-passages only: question text -> the file names of its gold supporting articles (labels)
    gold_files: dict[str, list[str]] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def _encoder_for(model: str | None):
    return DenseEncoder(model)


def _encoder(settings: ArmSettings):
    """One encoder per model per process: loading it costs seconds and memory, and the index build and the
    Hybrid-RAG arm need the same one (its encode calls are serialised by the retriever)."""
    return _encoder_for(settings.dense_model)


def prepare_indexes(
    names: tuple[str, ...],
    corpus: SnapshotCorpus,
    index_root: str | Path,
    settings: ArmSettings,
    *,
    progress: bool = False,
) -> dict[str, tuple[IndexBuild, bool]]:
    """Build (or find) the persisted indexes the named arms need over ``corpus``: kind → (build record, built now?)."""
    store = IndexStore(index_root)
    kinds = {k for n in names for k in INDEX_KINDS.get(n, ())}
    out: dict[str, tuple[IndexBuild, bool]] = {}
    if "bm25" in kinds:
        _, build, built = store.ensure_bm25(corpus)
        out["bm25"] = (build, built)
    if "dense" in kinds:
        _, build, built = store.ensure_dense(corpus, _encoder(settings), progress=progress)
        out["dense"] = (build, built)
    if "paperqa" in kinds:
        _, build, built = paperqa_arm.ensure_paperqa_index(
            store, corpus, settings.paperqa_embedding, settings.dense_model
        )
        out["paperqa"] = (build, built)
    return out


def build_systems(plan: ArmPlan, config: Any, client: Any) -> dict[str, System]:
    """The named arms over ``plan.folder`` sharing ``config`` and ``client``; indexes must already exist."""
    caps = dict(question_timeout_s=config.budget.question_timeout_s, max_tokens=config.budget.max_tokens_per_query)
    store = IndexStore(plan.index_root)
    s = plan.settings
    out: dict[str, System] = {}

    def need(kind: str, got):
        if got is None:
            raise IndexFolderError(
                f"{plan.index_root}: no {kind} index for corpus {str(plan.index_checksum)[:12]}… (prepare it first)"
            )
        return got

    for name in plan.names:
        if name == "lens":
            out[name] = LensSystem(plan.folder, config, client)
        elif name == "react":
            out[name] = ReActSystem(
                plan.folder, client, context_tokens=config.llm.n_ctx, max_steps=s.react_steps, **caps
            )
        elif name == "closed":
            out[name] = ClosedBookSystem(client, **caps)
        elif name == "paperqa":
            got = paperqa_arm.load_paperqa_index(store, str(plan.index_checksum), s.paperqa_embedding, s.dense_model)
            index, build = need("paperqa", got)
            out[name] = paperqa_arm.PaperQASystem(
                index,
                build,
                plan.folder,
                config,
                client,
                embedding=s.paperqa_embedding,
                dense_model=s.dense_model,
                **caps,
            )
        elif name in ("bm25", "bm25-span"):
            index, build = need("bm25", store.load_bm25(str(plan.index_checksum)))
            out[name] = RAGSystem(
                BM25Retriever(index, build),
                plan.folder,
                client,
                k=s.k,
                span=name == "bm25-span",
                passage_chars=s.passage_chars,
                **caps,
            )
        elif name == "gold-passages":
            out[name] = RAGSystem(GoldRetriever(plan.gold_files), plan.folder, client, k=GoldRetriever.K, **caps)
        elif name == "hybrid":
            encoder = _encoder(s)
            bm, bm_build = need("bm25", store.load_bm25(str(plan.index_checksum)))
            dn, dn_build = need("dense", store.load_dense(str(plan.index_checksum), encoder))
            retriever = HybridRetriever(bm, bm_build, dn, dn_build, encoder, depth=s.hybrid_depth, rrf_k=s.rrf_k)
            out[name] = RAGSystem(retriever, plan.folder, client, k=s.k, passage_chars=s.passage_chars, **caps)
        else:  # pragma: no cover - parse_systems guards the names
            raise DataError(f"unknown system {name!r}")
    return out
