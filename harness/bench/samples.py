"""Frozen, stratified, nested question samples G_125 ⊂ G_250 ⊂ G_500 (LENS paper, appendix "Sampling").

Strata are ``type × supporting-fact count`` (counts of distinct (title, sent_id) pairs; counts at or above
``sf_cap`` share one cell, so the default cap 5 gives the paper's eight cells: 2 types × {2, 3, 4, 5+}).

One frozen, stratum-balanced order is drawn once from the population:

1. inside each stratum, questions are ordered by ``sha256(f"{seed}:{id}")`` (a seeded shuffle that is the same
   on every machine and Python/NumPy version);
2. the order is then filled one position at a time by Tijdeman's chairman-assignment rule: position k goes
   to the stratum with the earliest deadline ``(c_s + B)·N/N_s`` among those that may take one more without
   running ``B`` ahead of their share ``k·N_s/N`` (exact rational arithmetic; ties go to the larger stratum,
   then to the label), where N_s is the stratum's population count, c_s how many it already has and
   ``B = 1 − 1/(2m − 2)`` for m non-empty strata.

Each position depends only on earlier ones, so G_n is the first n ids of the order whatever the largest size
requested, and every prefix holds each stratum within B (< 1) questions of its proportional share, so its
share deviates from the population's by less than 1/n (Tijdeman, "The chairman assignment problem", 1980).

Hashes are sha256 of canonical id lists: UTF-8 ids, each followed by ``\\n``. The *order hash* takes the ids
in frozen order (so it equals ``sha256sum G125.txt``); the *sample hash* takes them sorted by code point.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Sequence

from harness.bench.datasets import DataError, Question
from harness.files import read_json_manifest, write_json_atomic, write_text_atomic

__all__ = [
    "DEFAULT_SIZES",
    "DEFAULT_SEED",
    "SampleStage",
    "FrozenSample",
    "stratum_of",
    "ids_sha256",
    "frozen_order",
    "draw_samples",
    "write_samples",
    "read_samples",
    "parse_sizes",
]

DEFAULT_SIZES = (125, 250, 500)
DEFAULT_SEED = 42
DEFAULT_SF_CAP = 5
SAMPLE_FORMAT = "lens-sample/1"


def stratum_of(question: Question, sf_cap: int = DEFAULT_SF_CAP) -> str:
    """The stratum label ``"<type>/<count>"`` (``"<type>/<cap>+"`` at or above the cap)."""
    count = len(set(question.supporting_facts))
    return f"{question.type}/{count}" if count < sf_cap else f"{question.type}/{sf_cap}+"


def ids_sha256(ids: Iterable[str]) -> str:
    """sha256 of the canonical id list: each id UTF-8 encoded and followed by a newline."""
    h = hashlib.sha256()
    for qid in ids:
        h.update(qid.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def parse_sizes(text: str | Sequence[int]) -> tuple[int, ...]:
    """``"125,250,500"`` → (125, 250, 500): positive, unique, ascending. Raises DataError otherwise."""
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        try:
            sizes = [int(p) for p in parts]
        except ValueError:
            raise DataError(f"--sizes {text!r}: expected comma-separated whole numbers, e.g. 125,250,500") from None
    else:
        sizes = list(text)
    if not sizes:
        raise DataError("--sizes: no sizes given")
    if any(s <= 0 for s in sizes):
        raise DataError(f"--sizes {text!r}: sizes must be positive")
    return tuple(sorted(set(sizes)))


@dataclass(frozen=True)
class SampleStage:
    """One nested sample G_n: the first ``size`` ids of the frozen order, with its hashes and balance."""

    name: str
    size: int
    ids: tuple[str, ...]  # frozen order
    sample_sha256: str
    order_sha256: str
    strata: dict[str, int]
    max_abs_deviation: float  # max over population strata of |share in G_n − population share| (fraction)
    empty_strata: tuple[str, ...]

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "size": self.size,
            "sample_sha256": self.sample_sha256,
            "order_sha256": self.order_sha256,
            "strata": dict(sorted(self.strata.items())),
            "max_abs_deviation": self.max_abs_deviation,
            "max_abs_deviation_pp": round(100 * self.max_abs_deviation, 4),
            "empty_strata": list(self.empty_strata),
        }


@dataclass(frozen=True)
class FrozenSample:
    """The frozen order over a population and its nested stages."""

    seed: int
    sf_cap: int
    population_size: int
    population_strata: dict[str, int]
    order: tuple[str, ...]
    stages: tuple[SampleStage, ...]
    population_sha256: str | None = None  # sha256 of the questions file, when known
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def stage(self, size: int) -> SampleStage:
        for s in self.stages:
            if s.size == size:
                return s
        raise KeyError(f"no stage G{size}; stages: {', '.join(s.name for s in self.stages)}")

    def questions(self, population: Sequence[Question], size: int | None = None) -> list[Question]:
        """The questions of G_size (default: the whole order) in frozen order."""
        ids = self.order if size is None else self.stage(size).ids
        by_id = {q.id: q for q in population}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise DataError(f"{len(missing)} sampled ids are not in the questions given (first: {missing[0]})")
        return [by_id[i] for i in ids]

    def to_json(self) -> dict:
        return {
            "format": SAMPLE_FORMAT,
            "seed": self.seed,
            "strata_rule": f"type x supporting-fact count (>= {self.sf_cap} pooled)",
            "sf_cap": self.sf_cap,
            "population": {
                "questions": self.population_size,
                "sha256": self.population_sha256,
                "strata": dict(sorted(self.population_strata.items())),
            },
            "order": list(self.order),
            "order_sha256": ids_sha256(self.order),
            "stages": [s.to_json() for s in self.stages],
        }


def frozen_order(
    questions: Sequence[Question],
    *,
    seed: int = DEFAULT_SEED,
    size: int | None = None,
    sf_cap: int = DEFAULT_SF_CAP,
) -> list[Question]:
    """The first ``size`` questions (default: all) of the frozen stratum-balanced order."""
    n_pop = len(questions)
    size = n_pop if size is None else size
    if size > n_pop:
        raise DataError(f"sample size {size} exceeds the population of {n_pop} questions")
    queues: dict[str, list[Question]] = {}
    for q in questions:
        queues.setdefault(stratum_of(q, sf_cap), []).append(q)
    for label, members in queues.items():
        members.sort(key=lambda q: (hashlib.sha256(f"{seed}:{q.id}".encode()).hexdigest(), q.id))
    pop = {label: len(m) for label, m in queues.items()}
    taken = dict.fromkeys(queues, 0)
    labels = sorted(queues, key=lambda s: (-pop[s], s))  # ties: larger stratum first, then label order
    d = max(2 * len(labels) - 2, 1)  # bound B = 1 - 1/d on every stratum's deviation, in questions
    out: list[Question] = []
    for k in range(1, size + 1):
        best = None
        best_deadline = None
        for label in labels:
            n_s, c_s = pop[label], taken[label]
            if c_s >= n_s:
                continue
            # eligible: taking one more keeps the stratum at most B ahead of k·N_s/N
            if len(labels) > 1 and d * (k * n_s - c_s * n_pop) < n_pop:
                continue
            # deadline: the step at which it would fall B behind without this pick, (c_s + B)·N/N_s
            deadline = Fraction((d * c_s + d - 1) * n_pop, d * n_s)
            if best_deadline is None or deadline < best_deadline:
                best, best_deadline = label, deadline
        assert best is not None  # Tijdeman (1980): some stratum is always eligible
        out.append(queues[best][taken[best]])
        taken[best] += 1
    return out


def _stage(name: str, ids: Sequence[str], labels: dict[str, str], pop: Counter, n_pop: int) -> SampleStage:
    counts = Counter(labels[i] for i in ids)
    n = len(ids)
    deviation = max(abs(counts.get(s, 0) / n - pop[s] / n_pop) for s in pop)
    return SampleStage(
        name=name,
        size=n,
        ids=tuple(ids),
        sample_sha256=ids_sha256(sorted(ids)),
        order_sha256=ids_sha256(ids),
        strata=dict(sorted(counts.items())),
        max_abs_deviation=deviation,
        empty_strata=tuple(sorted(s for s in pop if counts.get(s, 0) == 0)),
    )


def draw_samples(
    questions: Sequence[Question],
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    seed: int = DEFAULT_SEED,
    sf_cap: int = DEFAULT_SF_CAP,
    population_sha256: str | None = None,
) -> FrozenSample:
    """Draw the frozen order once and cut the nested stages G_n (n in ``sizes``) as its prefixes."""
    sizes = parse_sizes(list(sizes))
    if not questions:
        raise DataError("no questions to sample from")
    if sizes[-1] > len(questions):
        raise DataError(f"sample size {sizes[-1]} exceeds the population of {len(questions)} questions")
    order = frozen_order(questions, seed=seed, size=sizes[-1], sf_cap=sf_cap)
    labels = {q.id: stratum_of(q, sf_cap) for q in questions}
    pop = Counter(labels.values())
    ids = [q.id for q in order]
    stages = tuple(_stage(f"G{n}", ids[:n], labels, pop, len(questions)) for n in sizes)
    return FrozenSample(
        seed=seed,
        sf_cap=sf_cap,
        population_size=len(questions),
        population_strata=dict(sorted(pop.items())),
        order=tuple(ids),
        stages=stages,
        population_sha256=population_sha256,
    )


def write_samples(
    sample: FrozenSample, out_dir: str | os.PathLike[str], *, source: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Write ``sample.json`` (order, stages, hashes, strata; ``source`` recorded as the population's path)
    and ``G<n>.txt`` (ids in frozen order, one a line; its sha256 is the stage's order hash). Every file is
    written atomically. Returns the paths written."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{out}: cannot create output folder: {exc.strerror or exc}") from None
    data = sample.to_json()
    if source is not None:
        data["population"]["path"] = str(source)
    written = [write_json_atomic(out / "sample.json", data)]
    for stage in sample.stages:
        written.append(write_text_atomic(out / f"{stage.name}.txt", "".join(i + "\n" for i in stage.ids)))
    return written


def read_samples(path: str | os.PathLike[str]) -> FrozenSample:
    """Read a ``sample.json`` written by ``write_samples`` (a file or its folder) and check its hashes."""
    p = Path(path)
    if p.is_dir():
        p = p / "sample.json"
    data = read_json_manifest(p, SAMPLE_FORMAT, "sample", DataError)
    try:
        order = tuple(data["order"])
        if ids_sha256(order) != data["order_sha256"]:
            raise DataError(f'{p}: field "order" does not match its order_sha256 (edited?)')
        stages = []
        for s in data["stages"]:
            ids = order[: s["size"]]
            if ids_sha256(ids) != s["order_sha256"] or ids_sha256(sorted(ids)) != s["sample_sha256"]:
                raise DataError(f"{p}: stage {s['name']}: ids do not match the recorded hashes (edited?)")
            stages.append(
                SampleStage(
                    name=s["name"],
                    size=s["size"],
                    ids=ids,
                    sample_sha256=s["sample_sha256"],
                    order_sha256=s["order_sha256"],
                    strata=dict(s["strata"]),
                    max_abs_deviation=s["max_abs_deviation"],
                    empty_strata=tuple(s["empty_strata"]),
                )
            )
        pop = data["population"]
        return FrozenSample(
            seed=data["seed"],
            sf_cap=data["sf_cap"],
            population_size=pop["questions"],
            population_strata=dict(pop["strata"]),
            order=order,
            stages=tuple(stages),
            population_sha256=pop.get("sha256"),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"{p}: malformed sample file (field {exc})") from None
