"""The audit's workloads as a config names them: HotpotQA (official questions and an article pool) and the
spec → :class:`~harness.workloads.Workload` resolution. The types and the BEIR loader: :mod:`harness.workloads`.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.audit.config import WorkloadSpec, resolve_data_path
from harness.bench.datasets import DataError, article_key, load_articles, load_questions
from harness.files import sha256_file
from harness.workloads import Asset, InputError, Query, Workload, load_beir, make_workload

__all__ = ["load_hotpotqa", "load_workload"]


def load_hotpotqa(questions: str | os.PathLike, articles: str | os.PathLike, *, name: str | None = None) -> Workload:
    """A workload from HotpotQA: assets = the article pool, queries = the questions, gold = supporting titles.

    Asset id is the article title (the pool has one article per title), text is the title line followed by the
    article's sentences. A supporting title missing from the pool is an error (the gold product would be
    unreachable). Uses :mod:`harness.bench.datasets` for validated parsing.
    """
    try:
        qs = load_questions(questions)
        arts = load_articles(articles)
    except DataError as exc:
        raise InputError(str(exc)) from None
    by_key: dict[str, str] = {}
    assets: list[Asset] = []
    for art in arts:
        key = article_key(art.title)
        if key in by_key:
            raise InputError(f"{articles}: title {art.title!r} appears twice (asset ids are titles)")
        by_key[key] = art.title
        assets.append(Asset(art.title, "article", art.title + "\n" + "".join(art.sentences).strip()))
    queries: list[Query] = []
    for q in qs:
        gold = []
        for title in q.gold_titles:
            hit = by_key.get(article_key(title))
            if hit is None:
                raise InputError(f"{questions}: question {q.id}: supporting title {title!r} is not in {articles}")
            gold.append(hit)
        queries.append(Query(q.id, q.question, tuple(gold), None))
    sources = {str(Path(p)): sha256_file(p) for p in (questions, articles)}
    return make_workload(name or "hotpotqa", assets, queries, sources)


def load_workload(spec: WorkloadSpec, root: Path, config_name: str | None = None) -> Workload:
    """Resolve the spec's data paths against ``root`` and load the workload."""
    if spec.format == "beir":
        folder = resolve_data_path(
            spec.path or "", f"workloads[{spec.name}].path", root, config=config_name, folder=True
        )
        return load_beir(folder, split=spec.split, name=spec.name)
    q = resolve_data_path(spec.questions or "", f"workloads[{spec.name}].questions", root, config=config_name)
    a = resolve_data_path(spec.articles or "", f"workloads[{spec.name}].articles", root, config=config_name)
    return load_hotpotqa(q, a, name=spec.name)
