"""BM25-RAG and Hybrid-RAG: a persisted index ranks documents, the top ``k`` go into one answer call.

- **BM25-RAG** ranks with the snapshot's persisted bm25s index (Lucene, k1 0.9, b 0.4, stemming, English
  stopwords). Documents that match no query term are not retrieved (they would only fill the list in file-name
  order).
- **Hybrid-RAG** fuses BM25's top 200 and the dense index's top 200 (cosine over sentence-transformers
  vectors persisted with the index) by reciprocal rank fusion with k = 60, ties broken by document id (file name),
  through ``harness.retrieval.reciprocal_rank_fusion``.

Both read the retrieved files from the folder as it is at query time (an index built on D125 still points at
files that exist in D250: growth is append-only) and put them, fenced as data, into ``harness/prompts/rag.md``. The
passages placed in the prompt are the evidence (for Ground) and their documents the retrieved set (for Ev.Rec).
The index is what they know of the corpus: a document added after the build can never be retrieved — the
stale-index arm measures exactly that.
"""

from __future__ import annotations

import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from harness.bench.snapshots import SENTENCE_LINE_OFFSET
from harness.bench.systems.answer_call import ANSWER_TOKENS, PROMPTS, call_for_answer
from harness.bench.systems.base import QuestionBudget, RunLevelError, System, error_text
from harness.bench.systems.corpus import read_snapshot_doc
from harness.bench.systems.indexes import IndexBuild
from harness.bench.systems.prediction import Passage, Prediction, RetrievedDoc
from harness.retrieval import RRF_K, BM25Index, DenseEncoder, DenseIndex, reciprocal_rank_fusion
from lens import LLMClient, LLMError
from lens.parts import answer_span, fence_passage, render

__all__ = ["Retriever", "BM25Retriever", "HybridRetriever", "GoldRetriever", "RAGSystem", "DEFAULT_K", "HYBRID_DEPTH"]

DEFAULT_K = 5
HYBRID_DEPTH = 200
PASSAGE_CHARS = 1500  # per document placed in the prompt: HotpotQA abstracts are shorter; long files are cut


class Retriever(Protocol):
    kind: str
    builds: list[IndexBuild]  # the persisted indexes it reads

    def rank(self, question: str, top: int) -> list[str]:
        """Document ids (file names), best first, at most ``top``."""

    def params(self) -> dict[str, Any]: ...


class BM25Retriever:
    kind = "bm25"

    def __init__(self, index: BM25Index, build: IndexBuild) -> None:
        self.index = index
        self.builds = [build]

    def rank(self, question: str, top: int) -> list[str]:
        return [doc for doc, score in self.index.search_ids(question, top) if score > 0]

    def params(self) -> dict[str, Any]:
        return {"bm25": asdict(self.index.params), "index_hash": self.index.index_hash}


class GoldRetriever:
    """The gold-passages reference arm's "retriever": the question's gold supporting articles, from labels
    (``uses_gold``). It reads no index."""

    kind = "gold-passages"
    K = 10  # every gold article of a question (HotpotQA has 2; a few more at most)

    def __init__(self, gold_files: dict[str, list[str]]) -> None:
        self.gold_files = gold_files
        self.builds: list[IndexBuild] = []

    def rank(self, question: str, top: int) -> list[str]:
        return list(self.gold_files.get(question, []))[:top]

    def params(self) -> dict[str, Any]:
        return {"uses_gold": True, "source": "supporting_facts titles"}


class HybridRetriever:
    kind = "hybrid"

    def __init__(
        self,
        bm25: BM25Index,
        bm25_build: IndexBuild,
        dense: DenseIndex,
        dense_build: IndexBuild,
        encoder: DenseEncoder,
        *,
        depth: int = HYBRID_DEPTH,
        rrf_k: int = RRF_K,
    ) -> None:
        if bm25.ids != dense.ids:
            raise ValueError("hybrid: the BM25 and dense indexes cover different documents")
        self.bm25, self.dense, self.encoder = bm25, dense, encoder
        self.builds = [bm25_build, dense_build]
        self.depth, self.rrf_k = depth, rrf_k
        self._ids = dense.ids
        self._encode_lock = threading.Lock()  # one model, shared by the run's threads

    def rankings(self, question: str) -> tuple[list[str], list[str]]:
        """(BM25 top ``depth`` with a positive score, dense top ``depth``), ids best first."""
        lexical = [doc for doc, score in self.bm25.search_ids(question, self.depth) if score > 0]
        with self._encode_lock:
            qv = self.encoder.encode([question])
        idx, _ = self.dense.search(qv, self.depth)
        return lexical, [self._ids[i] for i in idx[0]]

    def rank(self, question: str, top: int) -> list[str]:
        lexical, dense = self.rankings(question)
        return [doc for doc, _ in reciprocal_rank_fusion([lexical, dense], k=self.rrf_k, top=top)]

    def params(self) -> dict[str, Any]:
        return {
            "bm25": asdict(self.bm25.params),
            "dense_model": self.dense.model_id,
            "depth": self.depth,
            "rrf_k": self.rrf_k,
            "tie_break": "document id",
            "index_hash": [self.bm25.index_hash, self.dense.index_hash],
        }


def _shown_sentences(sentences: tuple[str, ...], limit: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    used = 0
    for sid, s in enumerate(sentences):
        if not s:
            continue
        if out and used + len(s) > limit:
            break
        out.append((sid, s))
        used += len(s)
    return out


class RAGSystem(System):
    """Retrieve ``k`` documents with ``retriever``, answer in one call from ``harness/prompts/rag.md``."""

    index_free = False

    def __init__(
        self,
        retriever: Retriever,
        folder: str | Path,
        client: LLMClient,
        *,
        k: int = DEFAULT_K,
        question_timeout_s: float,
        max_tokens: int,
        passage_chars: int = PASSAGE_CHARS,
        span: bool = False,
    ) -> None:
        super().__init__(question_timeout_s=question_timeout_s, max_tokens=max_tokens)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        # "bm25" | "bm25-span" | "hybrid" | "gold-passages"
        self.name = retriever.kind + ("-span" if span else "")  # type: ignore[misc]
        self.span = span  # LENS shortens the answer to a span of the evidence (lens.answer_span)
        self.index_free = not retriever.builds  # type: ignore[misc]
        self.retriever = retriever
        self.folder = Path(folder)
        self.client = client
        self.k = k
        self.passage_chars = passage_chars

    def params(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "prompt": "rag",
            "passage_chars": self.passage_chars,
            "answer_tokens": ANSWER_TOKENS,
            **({"answer_span": True} if self.span else {}),
            **self.retriever.params(),
            "index_corpus_checksum": [b.corpus_checksum for b in self.retriever.builds],
        }

    def _answer(self, question: str, budget: QuestionBudget) -> Prediction:
        pred = Prediction(system=self.name, answer="")
        ranked = self.retriever.rank(question, self.k)
        blocks: list[str] = []
        missing: list[str] = []
        for name in ranked:
            doc = read_snapshot_doc(self.folder, name)
            if doc is None:  # indexed, but gone from the folder or unreadable now
                missing.append(name)
                continue
            shown = _shown_sentences(doc.sentences, self.passage_chars)
            blocks.append(fence_passage(f"P{len(blocks) + 1}", doc.title, shown))
            pred.retrieved.append(RetrievedDoc(name, doc.title, doc.location))
            text = "\n".join([doc.title, *(s for _, s in shown)])
            if doc.location is not None:  # a unit (a PDF page): its lines are not snapshot sentences
                pred.evidence.append(Passage(path=doc.file, title=doc.title, text=text, location=doc.location))
                continue
            last = shown[-1][0] if shown else None
            pred.evidence.append(
                Passage(
                    path=name,
                    title=doc.title,
                    text=text,
                    line_start=1,
                    line_end=(last + SENTENCE_LINE_OFFSET) if last is not None else 1,
                    first_sentence=0 if shown else None,
                    last_sentence=last,
                )
            )
        pred.details = {"ranked": ranked}
        if missing:
            pred.details["missing_files"] = missing
        passages = "\n\n".join(blocks) if blocks else "(no passages were retrieved)"
        try:
            pred.answer = call_for_answer(
                self.client, render("rag", package=PROMPTS, question=question.strip(), passages=passages), budget
            )
            if self.span and pred.answer:
                span = answer_span(pred.answer, question, [p.text for p in pred.evidence])
                pred.details["answer_span"] = {"how": span.how, "verified": span.verified, "from": pred.answer}
                pred.answer = span.answer
        except RunLevelError:
            raise
        except LLMError as exc:
            pred.error = error_text(exc)
        return self._charge(pred, budget)
