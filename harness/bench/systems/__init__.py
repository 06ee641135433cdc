"""The benchmark's five arms behind one interface: ``System.answer(question) -> Prediction``.

- ``lens``   — the LENS agent (``lens.Agent``), index-free;
- ``react``  — ReAct search over the local snapshot (search / open / lookup / finish, 7 steps, forced finish);
- ``bm25``   — BM25-RAG over a persisted bm25s index, top-k documents, one answer call;
- ``hybrid`` — Hybrid-RAG: BM25 top-200 + dense top-200 fused by RRF (k = 60, ties by document id);
- ``closed`` — Closed-Book, the LLM alone.

All arms share one ``LensConfig`` and one ``LLMClient`` (model, per-call timeout, per-question cap).
"""

from harness.bench.systems.base import QuestionBudget, RunLevelError, System
from harness.bench.systems.closed_book import ClosedBookSystem
from harness.bench.systems.corpus import SnapshotCorpus, SnapshotDoc
from harness.bench.systems.indexes import IndexBuild, IndexStore
from harness.bench.systems.lens_arm import LensSystem, prediction_from_result
from harness.bench.systems.live_search import LiveSearch
from harness.bench.systems.prediction import Passage, Prediction, RetrievedDoc
from harness.bench.systems.rag import BM25Retriever, HybridRetriever, RAGSystem
from harness.bench.systems.react import ReActSystem, parse_step
from harness.bench.systems.registry import (
    SYSTEM_NAMES,
    ArmPlan,
    ArmSettings,
    build_systems,
    index_free,
    parse_systems,
    prepare_indexes,
    reads_corpus,
)

__all__ = [
    "SYSTEM_NAMES",
    "ArmPlan",
    "ArmSettings",
    "BM25Retriever",
    "ClosedBookSystem",
    "HybridRetriever",
    "IndexBuild",
    "IndexStore",
    "LensSystem",
    "LiveSearch",
    "Passage",
    "Prediction",
    "QuestionBudget",
    "RAGSystem",
    "ReActSystem",
    "RetrievedDoc",
    "RunLevelError",
    "SnapshotCorpus",
    "SnapshotDoc",
    "System",
    "build_systems",
    "index_free",
    "parse_step",
    "parse_systems",
    "prediction_from_result",
    "prepare_indexes",
    "reads_corpus",
]
