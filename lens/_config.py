"""Typed configuration with named presets.

Precedence, lowest to highest: built-in defaults < preset file (``configs/<name>.toml``) < user config file
< environment variables (``LENS_<SECTION>__<KEY>``) < explicit overrides (CLI flags, ``--set a.b=c``).

The canonical hash covers every field that can change a result; fields that only say *where* things live
(cache folders) are excluded, and API keys are never part of the configuration at all: only the *name* of the
environment variable that holds the key is stored.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli is the same parser, before it joined the stdlib
    import tomli as tomllib
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lens._errors import LensError

__all__ = [
    "ConfigError",
    "LensConfig",
    "LLMSettings",
    "BudgetSettings",
    "PriorSettings",
    "LoopSettings",
    "OracleReliability",
    "GradedEvidence",
    "MemorySettings",
    "ReaderSettings",
    "AblationSettings",
    "available_presets",
    "load_config",
    "merge_overrides",
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
    local_model: Literal["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"] = "qwen2.5-coder-1.5b-instruct"
    api_key_env: str = Field("LENS_API_KEY", description="Name of the environment variable holding the key.")
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature (OpenAI's range).")
    seed: int = Field(0, ge=0, le=2**32 - 1)
    max_output_tokens: int = Field(512, ge=1, le=131_072)
    call_timeout_s: float = Field(120.0, gt=0, le=86_400)
    logprobs: bool = Field(True, description="Ask observation calls for token log-probabilities (graded evidence).")
    # transport: how hard to try, not what is asked; a resume may change them
    max_retries: int = Field(3, ge=0, le=20, json_schema_extra=_NOT_HASHED)
    retry_backoff_s: float = Field(1.0, ge=0, le=600, json_schema_extra=_NOT_HASHED)
    cache: bool = True
    cache_dir: str | None = Field(None, json_schema_extra=_NOT_HASHED)
    n_ctx: int = Field(8192, ge=512, le=131_072, description="Context window of the embedded server.")
    n_threads: int | None = Field(None, ge=1, le=1024, json_schema_extra=_NOT_HASHED)
    startup_timeout_s: float = Field(300.0, gt=0, le=86_400, json_schema_extra=_NOT_HASHED)

    @property
    def served_model(self) -> str:
        return self.model or self.local_model

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        """An http(s) URL with a host and, if given, a numeric port (checked here, not deep in the client)."""
        if value is None or not value.strip():
            return None
        from urllib.parse import urlsplit

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
    max_tokens_per_query: int = Field(128_000, ge=1, le=100_000_000)
    max_files: int = Field(10, ge=1, le=100_000, description="Files admitted to evidence extraction.")
    max_rounds: int = Field(6, ge=0, le=1000, description="L: exploration rounds of the propose-observe-update loop.")
    c0: int = Field(4, ge=0, le=1000)
    c1: int = Field(2, ge=1, le=1000)
    question_timeout_s: float = Field(300.0, gt=0, le=86_400)

    @property
    def max_oracle_calls(self) -> int:
        return self.c0 + self.c1 * self.max_rounds


class PriorSettings(_Section):
    candidates: int = Field(10, ge=1, le=100_000, description="|C_init|: documents kept by the prior.")
    title_weight: float = Field(3.0, ge=0, le=1000)
    lexical_weight: float = Field(1.0, ge=0, le=1000)
    layout_weight: float = Field(0.5, ge=0, le=1000)
    memory_weight: float = Field(2.0, ge=0, le=1000)
    link_hop: bool = True
    link_hop_seeds: int = Field(2, ge=0, le=1000)
    window_sentences: int = Field(6, ge=1, le=1000, description="Sentences per candidate window.")
    temperature: float = Field(1.0, gt=0, le=1000, description="Prior weight of a document = exp(score / temperature).")


# features that exist only where the endpoint returns token log-probabilities (see lens._grading)
LOGPROB_FEATURES = ("logprob", "null_confidence")


class GradedEvidence(_Section):
    """The graded observation model fitted by ``lens calibrate fit`` (see ``lens._grading``): logistic
    coefficients over ``features`` (with and without the log-probability feature) and the rank-only baseline
    whose log-odds a reading's log likelihood ratio is measured against."""

    features: list[str]
    coef: list[float]
    intercept: float
    coef_no_logprob: list[float]
    intercept_no_logprob: float
    base_coef: float
    base_intercept: float
    max_log_lr: float = Field(4.6, gt=0, le=100, description="|log LR| cap of one reading.")
    n: int = Field(0, ge=0, le=10**12, description="Labelled readings behind the fit.")
    auc: float | None = Field(None, ge=0, le=1, description="Cross-validated AUC (reported, not used).")

    def logit(self, features: Mapping[str, float], *, logprobs: bool) -> float:
        """log-odds that the window holds the fact, given a reading's features (the model fitted without the
        log-probability features when the reply had none)."""
        if logprobs and self.coef:
            return self.intercept + sum(c * features.get(f, 0.0) for f, c in zip(self.features, self.coef))
        names = [f for f in self.features if f not in LOGPROB_FEATURES]
        return self.intercept_no_logprob + sum(c * features.get(f, 0.0) for f, c in zip(names, self.coef_no_logprob))

    def base_logit(self, features: Mapping[str, float]) -> float:
        """log-odds from the window's prior rank alone (what the belief already holds)."""
        return self.base_intercept + self.base_coef * features.get("log_rank", 0.0)

    @field_validator("coef_no_logprob")
    @classmethod
    def _lengths(cls, v: list[float], info) -> list[float]:
        feats = info.data.get("features", [])
        coef = info.data.get("coef", [])
        if feats and len(coef) != len(feats):
            raise ValueError(f"coef has {len(coef)} values for {len(feats)} features")
        if feats and len(v) != len([f for f in feats if f not in LOGPROB_FEATURES]):
            raise ValueError("coef_no_logprob needs one value per feature other than logprob and null_confidence")
        return v


class OracleReliability(_Section):
    """P(oracle says relevant | window relevant) and P(says relevant | not relevant), measured per model, and
    the graded model when one was fitted."""

    tpr: float = Field(0.6, gt=0, lt=1)
    fpr: float = Field(0.2, gt=0, lt=1)
    n: int = Field(0, ge=0, le=10**12, description="Labelled judgements behind the estimate (0 = uncalibrated prior).")
    graded: GradedEvidence | None = None

    def log_lr(self, relevant: bool) -> float:
        """The single-rate log likelihood ratio of a positive (tpr/fpr) or negative ((1−tpr)/(1−fpr)) reading."""
        if relevant:
            return math.log(self.tpr / self.fpr)
        return math.log((1.0 - self.tpr) / (1.0 - self.fpr))


class LoopSettings(_Section):
    delta: float = Field(0.1, gt=0, lt=1, description="Error level of the GLR stopping threshold.")
    gamma: dict[str, Annotated[float, Field(gt=0, le=100)]] = Field(
        default_factory=lambda: {
            "lookup": 1.0,
            "bridge": 1.2,
            "comparison": 1.2,
            "aggregation": 1.5,
            "computation": 1.5,
        }
    )
    relaxed_factor: float = Field(0.5, gt=0, le=1, description="Threshold multiplier on self-correction.")
    windows_per_round: int = Field(3, ge=1, le=1000)
    evidence_docs: int = Field(4, ge=1, le=1000, description="Documents kept in the consolidated evidence set E*.")
    window_token_cap: int = Field(1500, ge=64, le=1_000_000)
    reliability: dict[str, OracleReliability] = Field(default_factory=dict)
    observation_model: Literal["graded", "single-rate"] = Field(
        "graded", description="How a reading moves a belief; graded falls back to single-rate when uncalibrated."
    )


class MemorySettings(_Section):
    enabled: bool = True
    capacity: int = Field(32, ge=0, le=1_000_000)
    min_posterior: float = Field(
        0.1,
        ge=0,
        le=1,
        description="A requirement's favoured window enters the memory when its calibrated posterior is this high, "
        "read or not (its signal, read back, is similarity × posterior).",
    )
    dir: str | None = Field(None, json_schema_extra=_NOT_HASHED)


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


class AblationSettings(_Section):
    no_exploration: bool = False
    lexical_only_prior: bool = False
    no_memory: bool = False


class LensConfig(_Section):
    preset: str = "deep"
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
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def reliability(self) -> OracleReliability:
        """The oracle reliability calibrated for the served model, or the uncalibrated default."""
        return self.loop.reliability.get(self.llm.served_model, OracleReliability())


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


def available_presets() -> list[str]:
    """Names of the presets shipped in ``configs/`` (package ``lens.configs``)."""
    return sorted(
        p.name[: -len(".toml")] for p in resources.files("lens.configs").iterdir() if p.name.endswith(".toml")
    )


def _read_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None


def _preset_data(name: str) -> dict[str, Any]:
    ref = resources.files("lens.configs").joinpath(f"{name}.toml")
    if not ref.is_file():
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(available_presets())}")
    data = _read_toml(ref.read_text(encoding="utf-8"), f"preset {name}")
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

    path = file or env_file
    if path:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read config file: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start + 1}); TOML files are UTF-8") from None
        merged = _deep_merge(merged, _read_toml(text, str(p)))
        sources.append(str(p))
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
