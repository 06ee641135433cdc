"""The open-domain fullwiki setting (LENS paper, Tables 3 and 6): a frozen question sample and the raw dump.

``lens bench fullwiki`` prepares what the fullwiki runs read, in one folder:

- ``sample/sample.json`` and ``sample/G<n>.txt``: a frozen seeded sample of ``n`` (default 150) questions from
  the fullwiki dev file, drawn with the same stratified frozen order as the G_n samples
  (:mod:`harness.bench.samples`) from the population *minus the excluded ids* (``--exclude``: the questions
  ``lens calibrate`` uses, so no calibration question is evaluated). Its sample and order hashes are recorded;
  the same inputs give the same ids on every machine.
- ``pool/AA/wiki_00.bz2 …``: every article of the pool as ``.bz2`` JSONL shards in the official abstracts layout
  (one JSON object per line: ``id``, ``url``, ``title``, ``text`` as the sentence list), articles in id order,
  ``--shard-size`` per shard — the "raw dump" that LENS, ReAct and Closed-Book read with zero indexing.
- ``fullwiki.manifest.json``: the inputs' hashes, the sample's hashes and excluded-id hash, every shard's path,
  sha256 and article count, the pool checksum (sha256 over ``"<sha256>  <path>"`` lines, as for snapshots), and
  per sampled question whether all its gold (supporting-fact) articles are in the pool, with the missing titles.
  Our pool is the abstracts seen in the shared questions' contexts, not the paper's whole dump, so some fullwiki
  golds are absent: those questions are kept and scored (a system can only miss them), flagged here so every
  table can be given on all n and on the gold-in-pool subset.

A rerun over the same inputs verifies the folder and keeps it; different inputs are refused (a new folder is
needed). Files are written to a temporary folder and renamed into place, so a killed build leaves no half pool.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from harness.bench.datasets import Article, DataError, Question, article_key, load_articles, load_questions
from harness.bench.samples import DEFAULT_SEED, DEFAULT_SF_CAP, SampleStage, draw_samples, ids_sha256, write_samples
from harness.bench.snapshots import (
    corpus_checksum,
    path_sha256,
    sha256_file,
    shard_bytes,
    shard_path,
)
from harness.files import read_id_list, read_json_manifest, sha256_bytes, write_json_atomic

__all__ = [
    "FULLWIKI_FORMAT",
    "DEFAULT_FULLWIKI_SIZE",
    "FullwikiBuild",
    "gold_in_pool",
    "prepare_fullwiki",
    "read_fullwiki_manifest",
]

FULLWIKI_FORMAT = "lens-fullwiki/1"
DEFAULT_FULLWIKI_SIZE = 150
MANIFEST = "fullwiki.manifest.json"


def gold_in_pool(questions: Sequence[Question], articles: Iterable[Article]) -> dict[str, dict]:
    """Per question: whether every gold article (supporting-fact title, compared by ``article_key``) is in the
    pool, and the gold titles that are not."""
    keys = {article_key(a.title) for a in articles}
    out = {}
    for q in questions:
        missing = [t for t in q.gold_titles if article_key(t) not in keys]
        out[q.id] = {"gold_in_pool": not missing, "missing_gold": missing}
    return out


@dataclass(frozen=True)
class FullwikiBuild:
    out: Path
    status: str  # "built" | "existing"
    manifest: dict


def read_fullwiki_manifest(folder: str | os.PathLike[str]) -> dict:
    return read_json_manifest(Path(folder) / MANIFEST, FULLWIKI_FORMAT, "fullwiki", DataError)


def _verify(out: Path, manifest: dict) -> list[str]:
    problems = []
    for shard in manifest["pool"]["shards"]:
        f = out / "pool" / shard["path"]
        if not f.is_file():
            problems.append(f"{f}: missing")
        elif sha256_file(f) != shard["sha256"]:
            problems.append(f"{f}: sha256 differs from the manifest")
    sample_file = out / "sample" / f"G{manifest['sample']['size']}.txt"
    if not sample_file.is_file() or sha256_file(sample_file) != manifest["sample"]["order_sha256"]:
        problems.append(f"{sample_file}: missing or not the recorded order")
    return problems


def _pool_articles(articles_file: str | os.PathLike[str]) -> list[Article]:
    """The pool's articles by id; an id that appears twice is an error."""
    articles = sorted(load_articles(articles_file), key=lambda a: (a.id, a.title))
    ids = [a.id for a in articles]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"{articles_file}: article id {dup!r} appears more than once")
    return articles


def _sample_record(
    stage: SampleStage, seed: int, sf_cap: int, population: int, questions: Sequence[Question], excluded: set[str]
) -> dict:
    """The manifest's record of the frozen sample: its parameters, the exclusions, its hashes and ids."""
    return {
        "name": stage.name,
        "size": stage.size,
        "seed": seed,
        "sf_cap": sf_cap,
        "population": population,
        "excluded": len(questions) - population,
        "excluded_ids_sha256": ids_sha256(sorted(excluded & {q.id for q in questions})),
        "sample_sha256": stage.sample_sha256,
        "order_sha256": stage.order_sha256,
        "strata": stage.strata,
        "question_ids": list(stage.ids),
    }


def prepare_fullwiki(
    questions_file: str | os.PathLike[str],
    articles_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    size: int = DEFAULT_FULLWIKI_SIZE,
    seed: int = DEFAULT_SEED,
    sf_cap: int = DEFAULT_SF_CAP,
    exclude: Sequence[str | os.PathLike[str]] = (),
    shard_size: int = 500,
) -> FullwikiBuild:
    """Draw the frozen fullwiki sample and write the pool shards and the manifest (see the module docstring)."""
    if shard_size < 1:
        raise DataError(f"--shard-size {shard_size}: must be >= 1")
    out = Path(out)
    questions = load_questions(questions_file)
    excluded: set[str] = set()
    for path in exclude:
        excluded |= read_id_list(path)
    population = [q for q in questions if q.id not in excluded]
    if size > len(population):
        raise DataError(
            f"--size {size}: only {len(population)} questions remain after excluding {len(questions) - len(population)}"
        )
    articles = _pool_articles(articles_file)
    ids = [a.id for a in articles]
    inputs = {
        "questions": {"path": str(questions_file), "sha256": sha256_file(questions_file)},
        "articles": {"path": str(articles_file), "sha256": path_sha256(articles_file)},
        "exclude": [{"path": str(p), "sha256": sha256_file(p)} for p in exclude],
    }
    fs = draw_samples(population, (size,), seed=seed, sf_cap=sf_cap, population_sha256=inputs["questions"]["sha256"])
    stage = fs.stage(size)
    chosen = set(stage.ids)
    sampled = [q for q in population if q.id in chosen]
    flags = gold_in_pool(sampled, articles)
    by_id = {a.id: a for a in articles}
    groups = [ids[i : i + shard_size] for i in range(0, len(ids), shard_size)]
    blobs = [(shard_path(k), shard_bytes(g, by_id), len(g)) for k, g in enumerate(groups)]
    shards = [{"path": p, "sha256": sha256_bytes(b), "articles": n} for p, b, n in blobs]
    manifest = {
        "format": FULLWIKI_FORMAT,
        "inputs": inputs,
        "sample": _sample_record(stage, seed, sf_cap, len(population), questions, excluded),
        "gold": {
            "in_pool": sum(f["gold_in_pool"] for f in flags.values()),
            "missing": sum(not f["gold_in_pool"] for f in flags.values()),
            "questions": {i: flags[i] for i in stage.ids},
        },
        "pool": {
            "layout": "official abstracts: <AA>/wiki_<nn>.bz2, one JSON object per line (id, url, title, text)",
            "articles": len(articles),
            "shard_size": shard_size,
            "checksum": corpus_checksum((s["path"], s["sha256"]) for s in shards),
            "shards": shards,
        },
    }
    if (out / MANIFEST).exists():
        return _existing(out, manifest)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".pool.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    for p, b, _ in blobs:
        target = tmp / p
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b)
    shutil.rmtree(out / "pool", ignore_errors=True)
    tmp.rename(out / "pool")
    write_samples(fs, out / "sample", source=questions_file)
    write_json_atomic(out / MANIFEST, manifest)  # last: its presence means the build is complete
    return FullwikiBuild(out, "built", manifest)


def _existing(out: Path, manifest: dict) -> FullwikiBuild:
    """An earlier build of the same inputs and parameters, verified; any other build is refused."""
    old = read_fullwiki_manifest(out)
    same = {k: old.get(k) for k in ("inputs", "sample", "pool")} == {
        k: manifest[k] for k in ("inputs", "sample", "pool")
    }
    if not same:
        raise DataError(f"{out}: holds a fullwiki build from other inputs or parameters; use a new --out folder")
    problems = _verify(out, old)
    if problems:
        raise DataError(f"{out}: the existing build does not verify: {problems[0]}")
    return FullwikiBuild(out, "existing", old)
