"""Typed configuration with named presets.

Precedence, lowest to highest: built-in defaults < preset file (``configs/<name>.toml``) < user config file
< environment variables (``LENS_<SECTION>__<KEY>``) < explicit overrides (CLI flags, ``--set a.b=c``).

The canonical hash covers every field that can change a result; fields that only say *where* things live
(cache folders) are excluded, and API keys are never part of the configuration at all: only the *name* of the
environment variable that holds the key is stored.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli is the same parser, before it joined the stdlib
    import tomli as tomllib
from urllib.parse import urlsplit

from platformdirs import user_config_dir
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lens._errors import LensError
from lens._files import canonical_hash

__all__ = [
    "ConfigError",
    "LensConfig",
    "LLMSettings",
    "BudgetSettings",
    "PriorSettings",
    "LoopSettings",
    "ReadingModelParams",
    "READING_FEATURES",
    "LOGPROB_FEATURES",
    "MemorySettings",
    "ReaderSettings",
    "AblationSettings",
    "available_presets",
    "load_config",
    "merge_overrides",
    "config_from_args",
    "user_config_path",
]

ENV_PREFIX = "LENS_"
_NOT_HASHED = {"hash": False}


class ConfigError(LensError, ValueError):
    """A configuration source (preset, file, environment, override) is malformed; the message names it."""


class _Section(BaseModel):
    # every number is finite and every numeric field bounded: a value no endpoint or machine can honour
    # (llm.temperature=-7.5, llm.max_output_tokens=1e12) is a configuration error naming its field
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class LLMSettings(_Section):
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; None starts the embedded local model.")
    model: str | None = Field(None, description="Model name at the endpoint; defaults to local_model.")
    local_model: Literal["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"] = Field(
        "qwen2.5-coder-1.5b-instruct", description="The embedded model started when no base_url is set."
    )
    api_key_env: str = Field("LENS_API_KEY", description="Name of the environment variable holding the key.")
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature (OpenAI's range).")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Sampling seed sent with every request.")
    max_output_tokens: int = Field(512, ge=1, le=131_072, description="Most tokens one reply may generate.")
    call_timeout_s: float = Field(120.0, gt=0, le=86_400, description="Seconds one LLM call may take.")
    logprobs: bool = Field(True, description="Ask observation calls for token log-probabilities (graded evidence).")
    # transport: how hard to try, not what is asked; a resume may change them
    max_retries: int = Field(
        3, ge=0, le=20, json_schema_extra=_NOT_HASHED, description="Re-sends after a 429, 5xx or timeout."
    )
    retry_backoff_s: float = Field(
        1.0, ge=0, le=600, json_schema_extra=_NOT_HASHED, description="First wait before a re-send (doubling)."
    )
    cache: bool = Field(True, description="Keep replies in the on-disk response cache (a hit costs no tokens).")
    cache_dir: str | None = Field(
        None,
        json_schema_extra=_NOT_HASHED,
        description="Folder of the response cache (default: the user cache folder's lens/responses); never inside the "
        "document folder.",
    )
    n_ctx: int = Field(8192, ge=512, le=131_072, description="Context window of the embedded server.")
    n_threads: int | None = Field(
        None, ge=1, le=1024, json_schema_extra=_NOT_HASHED, description="Embedded server threads (default: all cores)."
    )
    startup_timeout_s: float = Field(
        300.0,
        gt=0,
        le=86_400,
        json_schema_extra=_NOT_HASHED,
        description="Seconds the embedded server may take to serve its first completion.",
    )

    @property
    def served_model(self) -> str:
        return self.model or self.local_model

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        """An http(s) URL with a host and, if given, a numeric port (checked here, not deep in the client)."""
        if value is None or not value.strip():
            return None
        value = value.strip()
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a usable URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
        return value


class BudgetSettings(_Section):
    max_tokens_per_query: int = Field(
        128_000, ge=1, le=100_000_000, description="Prompt + completion tokens one question may spend."
    )
    max_files: int = Field(10, ge=1, le=100_000, description="Files admitted to evidence extraction.")
    max_rounds: int = Field(6, ge=0, le=1000, description="L: exploration rounds of the propose-observe-update loop.")
    c0: int = Field(4, ge=0, le=1000, description="Oracle calls outside the loop's rounds (c0 of c0 + c1·L).")
    c1: int = Field(2, ge=1, le=1000, description="Oracle calls per loop round (c1 of c0 + c1·L).")
    question_timeout_s: float = Field(300.0, gt=0, le=86_400, description="Wall-clock seconds one question may take.")

    @property
    def max_oracle_calls(self) -> int:
        return self.c0 + self.c1 * self.max_rounds


class PriorSettings(_Section):
    candidates: int = Field(10, ge=1, le=100_000, description="|C_init|: documents kept by the prior.")
    title_weight: float = Field(3.0, ge=0, le=1000, description="Weight of the title signal (names in the question).")
    lexical_weight: float = Field(1.0, ge=0, le=1000, description="Weight of the lexical signal (BM25, best = 1).")
    layout_weight: float = Field(0.5, ge=0, le=1000, description="Weight of the terms' share in a title line.")
    memory_weight: float = Field(2.0, ge=0, le=1000, description="Weight of the warm-reuse memory's signal.")
    link_hop: bool = Field(True, description="Score titles named in the best documents (the link hop).")
    link_hop_seeds: int = Field(2, ge=0, le=1000, description="Best documents whose text the link hop reads.")
    window_sentences: int = Field(6, ge=1, le=1000, description="Sentences per candidate window.")
    temperature: float = Field(1.0, gt=0, le=1000, description="Prior weight of a document = exp(score / temperature).")
    elsewhere_mass: float = Field(
        0.1,
        gt=0,
        lt=1,
        description="Prior P(a requirement's evidence lies outside its candidate windows): the prior's top-10 misses "
        "4.5 % of the calibration questions' gold articles (benchmarks/prior_recall.py), more for a bridge fact "
        "before its cue is known.",
    )
    bm25_k1: float = Field(0.9, ge=0, le=100, description="BM25 k1 (term-frequency saturation) of the lexical signal.")
    bm25_b: float = Field(0.4, ge=0, le=1, description="BM25 b (document-length normalisation) of the lexical signal.")
    cue_term_weight: float = Field(
        1.5, ge=0, le=100, description="BM25 weight of a term the requirement's cues name and the question does not."
    )
    partial_title_specificity: float = Field(
        0.85, ge=0, le=1, description="Title signal of a multi-word title found only in part (all of it: 1)."
    )
    name_word_specificity: float = Field(
        0.7, ge=0, le=1, description="A one-word title written capitalised in the question: its rarity (IDF) × this."
    )
    plain_word_specificity: float = Field(
        0.25, ge=0, le=1, description="A one-word title written in lower case in the question: its rarity × this."
    )
    fuzzy_title_weight: float = Field(
        0.8, ge=0, le=1, description="Title signal of a fuzzy name match: its similarity (0-1) × this."
    )
    fuzzy_title_cutoff: int = Field(
        88, ge=0, le=100, description="Least rapidfuzz ratio (0-100) of a name in the cues to a title for a match."
    )
    hop_weight: float = Field(
        0.6,
        ge=0,
        le=100,
        description="Link-hop signal as a fraction of title_weight (a title named in a top document).",
    )
    layout_pool: int = Field(
        50, ge=1, le=1_000_000, description="Documents (at least; 5 × the candidates if more) scored for layout hits."
    )


# The reading's features (see lens.loop._grading): the score exists only where the endpoint returns token
# log-probabilities; log_rank is the prior's own information, the baseline a reading's evidence is measured against.
# They name the columns of a reading model's table, so the table is checked here, where it is read.
READING_FEATURES = ("score", "found", "value", "subject_window", "log_rank")
LOGPROB_FEATURES = ("score",)


class ReadingModelParams(_Section):
    """The numbers of a reading model as a config holds them, one table per served model under
    ``[loop.reading_model."<model>"]`` (``lens calibrate fit`` writes them). What they mean, and the model that
    reads with them, is :class:`lens.loop._grading.ReadingModel`."""

    features: list[str] = Field(description="The reading's features the coefficients weigh, in order.")
    coef: list[float] = Field(description="One coefficient per feature: the model fitted with log-probabilities.")
    intercept: float = Field(description="Its intercept.")
    coef_no_logprob: list[float] = Field(
        description="One coefficient per feature but the log-probability ones: the model for a reply without them."
    )
    intercept_no_logprob: float = Field(description="Its intercept.")
    base_coef: float = Field(description="The rank-only baseline's coefficient of log_rank.")
    base_intercept: float = Field(description="The rank-only baseline's intercept.")
    max_log_lr: float = Field(3.0, gt=0, le=100, description="|log LR| cap of one reading.")
    n: int = Field(0, ge=0, le=10**12, description="Labelled readings behind the fit (0: not fitted).")
    auc: float | None = Field(None, ge=0, le=1, description="Cross-validated AUC (reported, not used).")
    outcome_scores: list[float] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="The log-probability score (feature 'score') of a typical reading that named a sentence and of "
        "one that named none, measured in calibration (medians): what a reading's two outcomes are worth before "
        "it is made, for the value of reading a window. None: judged without log-probabilities.",
    )
    value_precision: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Share of the readings that named a sentence for a question's final fact whose copied value is "
        "the gold answer (None: not measured). A reading's value is taken as the answer only when its requirement "
        "certified and this reaches loop.min_value_precision.",
    )

    @field_validator("coef_no_logprob")
    @classmethod
    def _lengths(cls, v: list[float], info) -> list[float]:
        feats = info.data.get("features", [])
        coef = info.data.get("coef", [])
        if feats and len(coef) != len(feats):
            raise ValueError(f"coef has {len(coef)} values for {len(feats)} features")
        if feats and len(v) != len([f for f in feats if f not in LOGPROB_FEATURES]):
            raise ValueError(f"coef_no_logprob needs one value per feature other than {', '.join(LOGPROB_FEATURES)}")
        return v


class LoopSettings(_Section):
    delta: float = Field(0.1, gt=0, lt=1, description="Error level of the GLR stopping threshold.")
    gamma: dict[str, Annotated[float, Field(gt=0, le=100)]] = Field(
        default_factory=lambda: {
            "lookup": 1.0,
            "bridge": 1.2,
            "comparison": 1.2,
            "aggregation": 1.5,
            "computation": 1.5,
        },
        description="γ(intent): the stopping threshold's factor per intent (harder intents need more evidence).",
    )
    relaxed_factor: float = Field(0.5, gt=0, le=1, description="Threshold multiplier on self-correction.")
    readings_per_round: int = Field(
        2, ge=1, le=1000, description="(requirement, window) readings per round, one oracle call each; at most c1."
    )
    evidence_docs: int = Field(4, ge=1, le=1000, description="Documents kept in the consolidated evidence set E*.")
    window_token_cap: int = Field(1500, ge=64, le=1_000_000, description="Most tokens of one window read.")
    min_reading_value: float = Field(
        0.1,
        ge=0,
        le=1,
        description="A window is read only when the probability that the reading changes which window its "
        "requirement favours, or certifies it, is at least this (under the reading model and the beliefs): a model "
        "whose readings are weak pays little for them, a strong one reads what it needs. 0: read every proposal.",
    )
    min_value_precision: float = Field(
        0.8,
        ge=0,
        le=1,
        description="A certified requirement's value (what a reading copied) is given as a fact to the answer only "
        "when the reading model's value_precision reaches this; otherwise the answer is made from the evidence's "
        "text, the reading's sentence put first.",
    )
    reading_model: dict[str, ReadingModelParams] = Field(
        default_factory=dict, description="What a reading is worth, per served model (lens calibrate fit)."
    )


class MemorySettings(_Section):
    enabled: bool = Field(True, description="Read and write the warm-reuse memory when a memory folder is given.")
    capacity: int = Field(32, ge=0, le=1_000_000, description="Entries one lookup may serve (the PIT capacity).")
    min_posterior: float = Field(
        0.1,
        ge=0,
        le=1,
        description="A requirement's favoured window enters the memory when its calibrated posterior is this high, "
        "read or not (its signal, read back, is similarity × posterior).",
    )
    min_similarity: float = Field(
        0.35,
        ge=0,
        le=1,
        description="Least cosine between a requirement's key and an entry's for the entry to be served (term vectors "
        "unless both carry an embedding).",
    )
    dir: str | None = Field(
        None, json_schema_extra=_NOT_HASHED, description="Folder of memory.jsonl (--memory); None: no memory."
    )


class ReaderSettings(_Section):
    max_file_bytes: int = Field(20_000_000, ge=1, le=2**40)
    max_container_bytes: int = Field(
        400_000_000,
        ge=1,
        le=2**40,
        description="A .jsonl/.bz2 container is read line by line up to this many (decompressed) bytes; "
        "its records stay in memory as one copy of their text.",
    )
    follow_symlinks: bool = False
    workers: int = Field(1, ge=1, le=1024, json_schema_extra=_NOT_HASHED)  # threads lose to serial reads under the GIL
    reuse_unchanged: bool = Field(
        True,
        json_schema_extra=_NOT_HASHED,
        description="Within one process, don't re-read files whose stat signature is unchanged.",
    )
    watch: bool = Field(
        True,
        json_schema_extra=_NOT_HASHED,
        description="A process that asks again about a folder watches its directories (Linux inotify) and skips "
        "listing it while nothing changed (each file is still stat'ed: an edit through a hard link outside the "
        "folder has no event); off for folders changed in ways inotify does not report (mmap "
        "writes, network file systems).",
    )
    stats_store: str | None = Field(
        None,
        json_schema_extra=_NOT_HASHED,
        description="The SQLite file of per-file statistics (outside the folder; default: the user cache "
        "folder's lens/stats.sqlite; ':memory:' keeps them for this process only).",
    )
    # Documents (PDF, Office, e-mail …) are extracted in worker processes (lens/reader/_extraction.py). These
    # bound resources; a file they stop is skipped and counted by its reason, so they are not in the config hash.
    max_pages: int = Field(
        2_000,
        ge=1,
        le=1_000_000,
        json_schema_extra=_NOT_HASHED,
        description="A PDF with more pages than this is skipped as too_many_pages.",
    )
    extraction_timeout_s: float = Field(
        60.0,
        gt=0,
        le=86_400,
        json_schema_extra=_NOT_HASHED,
        description="A document whose extraction takes longer is skipped as timeout: its worker process is killed "
        "and a new one reads the next file.",
    )
    extraction_memory_mb: int = Field(
        2048,
        ge=0,
        le=1 << 30,
        json_schema_extra=_NOT_HASHED,
        description="Address space each extraction worker may use (RLIMIT_AS), MB; 0: no cap. A file that needs "
        "more is skipped as corrupt.",
    )
    extraction_workers: int = Field(
        0,
        ge=0,
        le=1024,
        json_schema_extra=_NOT_HASHED,
        description="Worker processes that extract documents at once; 0: one per CPU this process may use.",
    )
    stats_keep_days: float = Field(
        30,
        ge=1,
        le=36500,
        json_schema_extra=_NOT_HASHED,
        description="The statistics store drops a folder's statistics once no question has used them for this many "
        "days, or for a day once the folder itself is gone (checked when a process first surveys, then daily); "
        "`lens corpus forget PATH` drops them at once. A dropped folder is read again when next asked about.",
    )


class AblationSettings(_Section):
    """Research switches, read once where the pipeline is built (``lens._agent.Pipeline``)."""

    no_exploration: bool = Field(False, description="Skip the propose–observe–update loop: E* is the prior's windows.")
    lexical_only_prior: bool = Field(
        False,
        description="The prior is BM25 alone: no title, layout, link-hop or memory signal (the memory is still "
        "read, and written, but its signal is not scored).",
    )
    no_memory: bool = Field(False, description="Neither read nor write the warm-reuse memory.")


class LensConfig(_Section):
    preset: str = Field("deep", description="The named preset these settings start from (configs/<name>.toml).")
    llm: LLMSettings = Field(default_factory=LLMSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    prior: PriorSettings = Field(default_factory=PriorSettings)
    loop: LoopSettings = Field(default_factory=LoopSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    reader: ReaderSettings = Field(default_factory=ReaderSettings)
    ablation: AblationSettings = Field(default_factory=AblationSettings)

    def canonical(self) -> dict[str, Any]:
        """Every result-relevant field, as plain JSON data (no paths, no secrets)."""
        return _hashable(self)

    def canonical_hash(self) -> str:
        """sha256 of the canonical JSON form; names the configuration in every run artifact."""
        return canonical_hash(self.canonical(), ascii=True)

    @model_validator(mode="after")
    def _call_bound(self) -> "LensConfig":
        if self.loop.readings_per_round > self.budget.c1:
            raise ValueError(
                f"loop.readings_per_round ({self.loop.readings_per_round}) exceeds budget.c1 ({self.budget.c1}): "
                "each reading is one oracle call and a round may make at most c1"
            )
        return self


def _hashable(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("hash") is False:
            continue
        value = getattr(model, name)
        out[name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _hashable(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def user_config_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The user's own config file, read (when it exists) after the preset and before ``--config``:
    ``$LENS_USER_CONFIG`` (empty: none), else ``config.toml`` in the platform's user config folder for lens.
    ``lens calibrate endpoint`` writes the served model's reading model there."""
    env = os.environ if env is None else env
    if "LENS_USER_CONFIG" in env:
        return Path(env["LENS_USER_CONFIG"]) if env["LENS_USER_CONFIG"].strip() else None
    return Path(user_config_dir("lens")) / "config.toml"


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start + 1}); TOML files are UTF-8") from None


MODELS_FILE = "reading-models.toml"  # per served model, under every preset: what a reading of it is worth


def available_presets() -> list[str]:
    """Names of the presets shipped in ``configs/`` (package ``lens.configs``)."""
    return sorted(
        p.name[: -len(".toml")]
        for p in resources.files("lens.configs").iterdir()
        if p.name.endswith(".toml") and p.name != MODELS_FILE
    )


def _read_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None


def _preset_data(name: str) -> dict[str, Any]:
    """The shipped reading models with preset ``name`` over them."""
    configs = resources.files("lens.configs")
    ref = configs.joinpath(f"{name}.toml")
    if name not in available_presets() or not ref.is_file():
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(available_presets())}")
    models = _read_toml(configs.joinpath(MODELS_FILE).read_text(encoding="utf-8"), f"configs/{MODELS_FILE}")
    data = _deep_merge(models, _read_toml(ref.read_text(encoding="utf-8"), f"preset {name}"))
    data.pop("preset", None)
    return data


def _deep_merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _parse_scalar(raw: str) -> Any:
    """Parse an override value: TOML/JSON literals where they parse, else the plain string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    low = raw.strip().lower()
    if low in {"true", "false"}:
        return low == "true"
    if low in {"none", "null"}:
        return None
    return raw


def _dotted(key: str, value: Any) -> dict[str, Any]:
    parts = [p for p in key.split(".") if p]
    if not parts:
        raise ConfigError(f"override {key!r}: empty key")
    out: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        out = {part: out}
    return out


def _env_data(env: Mapping[str, str]) -> tuple[dict[str, Any], str | None, str | None]:
    """Nested overrides from ``LENS_SECTION__KEY`` variables, plus LENS_PRESET and LENS_CONFIG."""
    data: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        path = name[len(ENV_PREFIX) :].lower().replace("__", ".")
        data = _deep_merge(data, _dotted(path, _parse_scalar(raw)))
    return data, env.get("LENS_PRESET") or None, env.get("LENS_CONFIG") or None


def merge_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any] | Iterable[str]) -> dict[str, Any]:
    """``data`` (nested plain settings) with ``overrides`` applied: a nested mapping, or ``"section.key=value"``
    strings whose values parse as TOML scalars (``true``, ``4``, ``0.5``, ``"text"``; anything else is a string).
    Raises ConfigError naming an item without ``=``. Validation happens when a LensConfig is built from it."""
    if isinstance(overrides, Mapping):
        return _deep_merge(dict(data), overrides)
    merged = dict(data)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r}: expected section.key=value")
        key, raw = item.split("=", 1)
        merged = _deep_merge(merged, _dotted(key.strip(), _parse_scalar(raw)))
    return merged


def load_config(
    preset: str | None = None,
    *,
    file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | list[str] | None = None,
) -> LensConfig:
    """Build the configuration from preset, file, environment and overrides (in that order).

    ``overrides`` is either a nested mapping or a list of ``"section.key=value"`` strings.
    Raises ConfigError naming the source and field that is wrong.
    """
    env = os.environ if env is None else env
    env_data, env_preset, env_file = _env_data(env)
    name = preset or env_preset or "deep"
    merged: dict[str, Any] = _preset_data(name)
    sources = [f"preset {name}"]

    user = user_config_path(env)
    for path in ([user] if user is not None and user.is_file() else []) + (
        [Path(file or env_file)] if file or env_file else []
    ):
        merged = _deep_merge(merged, _read_toml(_read_text(path), str(path)))
        sources.append(str(path))
    if env_data:
        merged = _deep_merge(merged, env_data)
        sources.append("environment (LENS_*__*)")
    if overrides:
        merged = merge_overrides(merged, overrides)
        sources.append("overrides")
    merged["preset"] = name
    try:
        return LensConfig.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc'])}: {err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration from {' + '.join(sources)}: {problems}") from None


def config_from_args(args: Any, **extra: Any) -> LensConfig:
    """Build the LensConfig from preset, --config, environment, --set and the explicit flags."""
    overrides = list(getattr(args, "set", []) or [])
    if getattr(args, "base_url", None):
        overrides.append(f"llm.base_url={args.base_url}")
    if getattr(args, "model", None):
        overrides.append(f"llm.model={args.model}")
    for key, value in extra.items():
        if value is not None:
            overrides.append(f"{key}={value}")
    return load_config(getattr(args, "preset", None), file=getattr(args, "config", None), overrides=overrides)
