"""Raw-document snapshots D_125 ⊂ D_250 ⊂ D_500 (SPEC §4 "Snapshots"; LENS paper, appendix "Corpus construction").

What D_n holds
- the gold (supporting-fact) articles of G_n's questions ("evidence"),
- the other context paragraphs shipped with those questions ("distractors"; an article that is gold for any
  question of G_n counts as evidence),
- a deterministic background pool at ``background_ratio`` (3:1) to those question-linked articles, as far as
  the pool allows (the realised ratio is recorded). Background candidates are pool articles linked to *no*
  question of the population file, so a later stage's evidence is never already present as background, and
  they are taken in the order of ``sha256(f"{seed}:{title}")``; D_n's background is a prefix of D_m's.

Articles come from the article pool (matched by exact title, then by ``article_key``); a context paragraph
whose article the pool lacks is written from the question's own context. Gold titles found in neither are
reported as ``missing_gold``.

File layout (one extensionless UTF-8 file per article): line 1 is the title, line ``k + 2`` is sentence k
(sent_id k of HotpotQA), each stripped, with any line-break characters inside replaced by spaces and empty
sentences kept as empty lines, so line numbers map back to sent_ids (``sentences_of_lines``).

File names come from ``safe_file_name`` (see there) and are unique even on case-insensitive, normalising
file systems; the title line, not the name, is the authoritative title.

Other formats (``file_format``, ``lens bench snapshot --as pdf|docx``): the same articles, one PDF or Word file each
(``harness.bench.renderers``: the title as the document's title metadata and its first line or Title paragraph, one
paragraph per sentence), named as above plus ``.pdf`` / ``.docx``. Everything else — stages, growth, manifests,
checksums, verification — is the same; the manifest's ``layout.format`` and ``parameters.writer`` say what wrote
the files. Line numbers do not map to sentences there (a PDF wraps them), and ``--shards`` is for text only.

Growth is append-only: D_m's files are D_n's files (byte-identical) plus new ones. Each stage is written into
a temporary folder and renamed into place, then its manifest ``D<n>.manifest.json`` (beside the folder, never
inside it) is written atomically. Re-running over an existing output folder verifies existing stages and only
adds missing ones; a stage that exists but differs from what the inputs produce is an error (nothing is ever
edited or removed). The corpus checksum is the sha256 of the lines ``"<sha256>  <name>\\n"`` sorted by name
(UTF-8 bytes), i.e. ``cd D125 && sha256sum -- * | LC_ALL=C sort -k 2 | sha256sum``.
"""

from __future__ import annotations

import bz2
import hashlib
import json
import math
import os
import re
import shutil
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence
from urllib.parse import quote, unquote

from harness.bench.datasets import Article, DataError, Question, article_key
from harness.bench.renderers import FILE_FORMATS, SUFFIX, render, undrawable, writer_info
from harness.bench.samples import (
    DEFAULT_SEED,
    DEFAULT_SF_CAP,
    DEFAULT_SIZES,
    FrozenSample,
    SampleStage,
    draw_samples,
    ids_sha256,
)
from harness.files import read_json_manifest, sha256_file, write_json_atomic

__all__ = [
    "SNAPSHOT_FORMAT",
    "SENTENCE_LINE_OFFSET",
    "MAX_NAME_BYTES",
    "SnapshotFile",
    "Composition",
    "SnapshotPlan",
    "SnapshotSet",
    "BuildResult",
    "VerifyReport",
    "line_of_sentence",
    "sentences_of_lines",
    "render_article",
    "safe_file_name",
    "name_key",
    "assign_file_names",
    "title_from_file_name",
    "corpus_checksum",
    "sha256_file",
    "path_sha256",
    "plan_snapshots",
    "build_snapshots",
    "verify_snapshots",
    "read_manifest",
    "snapshot_format",
    "shard_path",
    "shard_bytes",
]

SNAPSHOT_FORMAT = "lens-snapshot/1"
SENTENCE_LINE_OFFSET = 2  # sentence k of an article is on line k + 2 of its file (line 1 is the title)
MAX_NAME_BYTES = 200  # below every common file system's 255-byte limit, measured in NFD (macOS) form
DEFAULT_BACKGROUND_RATIO = 3.0
DEFAULT_SHARD_SIZE = 500
ROLES = ("evidence", "distractor", "background")


# --------------------------------------------------------------------------- line <-> sentence mapping


def line_of_sentence(sent_id: int) -> int:
    """The 1-based line of sentence ``sent_id`` (0-based, as HotpotQA counts) in a snapshot file."""
    if sent_id < 0:
        raise ValueError(f"sentence id must be >= 0, got {sent_id}")
    return sent_id + SENTENCE_LINE_OFFSET


def sentences_of_lines(first_line: int, last_line: int) -> range:
    """The sent_ids covered by 1-based inclusive lines ``first_line..last_line`` of a snapshot file.

    The title line (1) maps to no sentence; ``range`` is empty when the lines hold no sentence.
    """
    if first_line > last_line:
        raise ValueError(f"line range {first_line}-{last_line} is reversed")
    start = max(first_line, SENTENCE_LINE_OFFSET) - SENTENCE_LINE_OFFSET
    stop = last_line - SENTENCE_LINE_OFFSET + 1
    return range(start, max(start, stop))


_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # everything str.splitlines splits on


def _one_line(text: str) -> str:
    return _LINE_BREAKS.sub(" ", text).strip()


def render_article(title: str, sentences: Sequence[str]) -> str:
    """The raw text of an article's file: title line, then one (stripped) sentence per line."""
    return "\n".join([_one_line(title), *(_one_line(s) for s in sentences)]) + "\n"


# --------------------------------------------------------------------------- file names

# Characters that are percent-encoded (as %XX of their UTF-8 bytes) wherever they occur: path separators,
# Windows-reserved characters, '%' itself (so the encoding is reversible), controls, line/paragraph
# separators, invisible format characters (zero-width, bidi controls, soft hyphen, BOM) and lone surrogates.
# The set is fixed (not derived from Unicode categories) so names do not change with the Unicode version.
_ENCODE = re.compile(
    '[/\\\\:*?"<>|%\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff'
    "\ufff9-\ufffb\ud800-\udfff]"
)
_EXTENSION = re.compile(r"\.([A-Za-z0-9]{1,8})$")
_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{p}{i}" for p in ("COM", "LPT") for i in "123456789\u00b9\u00b2\u00b3"]
)
_SUFFIX_MARK = "%~"  # never produced by the encoding ('%' is always followed by two hex digits there)
_SUFFIX_HEX = 12


def _pct(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def _nfd_bytes(name: str) -> int:
    return len(unicodedata.normalize("NFD", name).encode("utf-8", "surrogatepass"))


def _title_hash(title: str) -> str:
    return hashlib.sha256(title.encode("utf-8", "surrogatepass")).hexdigest()[:_SUFFIX_HEX]


def _units(name: str) -> list[str]:
    """``name`` split into whole characters, a percent-encoded character (all its %XX bytes) being one."""
    units: list[str] = []
    for tok in re.findall(r"%[0-9A-F]{2}|%~|.", name, flags=re.S):
        if len(tok) == 3 and tok[0] == "%" and 0x80 <= int(tok[1:], 16) <= 0xBF and units and units[-1][0] == "%":
            units[-1] += tok  # a UTF-8 continuation byte belongs to the escape before it
        else:
            units.append(tok)
    return units


def _with_suffix(name: str, title: str, max_bytes: int) -> str:
    """``name`` cut to fit, plus ``%~<hash of title>``: unique per title, never splitting a character."""
    suffix = _SUFFIX_MARK + _title_hash(title)
    budget = max_bytes - len(suffix)
    units = _units(name)
    while units and _nfd_bytes("".join(units)) > budget:
        units.pop()
    return "".join(units) + suffix


def safe_file_name(title: str, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A portable, extensionless file name for ``title`` (collisions are resolved by ``assign_file_names``).

    Rules: NFC-normalise; percent-encode ``/ \\ : * ? " < > | %``, control, line-separator, invisible
    format and surrogate characters; encode a leading dot (hidden files, ``.``, ``..``), leading/trailing
    spaces and a trailing dot (Windows drops them); encode the last dot when what follows looks like a file
    extension (``Node.js`` → ``Node%2Ejs``) so no reader guesses a file type from the name; encode the first
    character of a Windows device name (``CON`` → ``%43ON``); names longer than ``max_bytes`` (UTF-8, NFD)
    are cut and get ``%~`` plus 12 hex digits of the title's sha256.
    """
    name = _ENCODE.sub(lambda m: _pct(m.group()), unicodedata.normalize("NFC", title))
    if name.startswith("."):
        name = "%2E" + name[1:]
    if name.startswith(" "):
        name = "%20" + name[1:]
    if name.endswith("."):
        name = name[:-1] + "%2E"
    elif name.endswith(" "):
        name = name[:-1] + "%20"
    m = _EXTENSION.search(name)
    if m and any(c.isalpha() for c in m.group(1)):
        name = name[: m.start()] + "%2E" + m.group(1)
    stem = name.split(".", 1)[0].rstrip(" ").upper()
    if stem in _WINDOWS_DEVICES:
        name = _pct(name[0]) + name[1:]
    if not name:  # cannot happen for a non-empty title, but never return an empty name
        name = "%~empty"
    if _nfd_bytes(name) > max_bytes:
        name = _with_suffix(name, title, max_bytes)
    return name


def name_key(name: str) -> str:
    """The key under which two names are the same file on case-insensitive, normalising file systems."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def assign_file_names(titles: Iterable[str], *, max_bytes: int = MAX_NAME_BYTES) -> dict[str, str]:
    """Map each distinct title to a unique safe file name.

    Titles whose names would coincide on a case-insensitive or normalising file system (``Foo``/``FOO``,
    composed/decomposed accents) all get the ``%~<sha256 of title>`` suffix, so the assignment depends only
    on the set of titles, not on their order.
    """
    base: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    for title in titles:
        if title in base:
            continue
        name = safe_file_name(title, max_bytes=max_bytes)
        base[title] = name
        groups.setdefault(name_key(name), []).append(title)
    out: dict[str, str] = {}
    for members in groups.values():
        if len(members) == 1:
            out[members[0]] = base[members[0]]
        else:
            for title in members:  # a name cut for length already carries its title's hash
                name = base[title]
                out[title] = name if _SUFFIX_MARK in name else _with_suffix(name, title, max_bytes)
    keys: dict[str, str] = {}
    for title, name in out.items():
        k = name_key(name)
        if k in keys:  # a 48-bit hash collision: refuse rather than overwrite
            raise DataError(f"file names for titles {keys[k]!r} and {title!r} collide ({name!r})")
        keys[k] = title
    return out


def title_from_file_name(name: str) -> str:
    """Decode a snapshot file name back to its title (prefix only, for names that had to be cut)."""
    cut = name.find(_SUFFIX_MARK)
    if cut >= 0:
        name = name[:cut]
    try:
        return unquote(name, encoding="utf-8", errors="surrogatepass")
    except UnicodeDecodeError:
        return unquote(name, encoding="utf-8", errors="replace")


# --------------------------------------------------------------------------- hashing


def path_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, or of a folder as the sorted ``"<sha256>  <relative path>\\n"`` lines of its files."""
    p = Path(path)
    if not p.is_dir():
        return sha256_file(p)
    rows = sorted(
        (f.relative_to(p).as_posix(), sha256_file(f))
        for f in p.rglob("*")
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
    )
    return corpus_checksum((name, sha) for name, sha in rows)


def corpus_checksum(entries: Iterable[tuple[str, str]]) -> str:
    """sha256 over ``"<sha256>  <name>\\n"`` lines sorted by name (UTF-8 bytes): the snapshot's identity."""
    rows = sorted(entries, key=lambda e: e[0].encode("utf-8", "surrogatepass"))
    h = hashlib.sha256()
    for name, sha in rows:
        h.update(f"{sha}  {name}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class SnapshotFile:
    """One file of a snapshot. ``role`` is the article's role in *this* stage (a distractor of D_n may be
    evidence in D_m when a later question cites it); its bytes never change."""

    name: str
    title: str
    article_id: str
    role: str
    sha256: str
    bytes: int

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "article_id": self.article_id,
            "role": self.role,
            "sha256": self.sha256,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class Composition:
    """Counts of Table 1's upper block, plus how the background target was met."""

    articles: int
    evidence: int
    distractors: int
    background: int
    background_target: int
    background_pool: int  # candidates available (articles linked to no question of the population)
    missing_gold: tuple[str, ...]

    @property
    def question_linked(self) -> int:
        return self.evidence + self.distractors

    @property
    def background_ratio(self) -> float:
        """Realised background : question-linked ratio."""
        return self.background / self.question_linked if self.question_linked else 0.0

    def to_json(self) -> dict:
        return {
            "articles": self.articles,
            "evidence": self.evidence,
            "distractors": self.distractors,
            "background": self.background,
            "question_linked": self.question_linked,
            "background_target": self.background_target,
            "background_pool": self.background_pool,
            "background_ratio": round(self.background_ratio, 6),
            "missing_gold": list(self.missing_gold),
        }


@dataclass(frozen=True)
class SnapshotPlan:
    """Everything D_n will hold, before anything is written."""

    name: str
    size: int
    question_ids: tuple[str, ...]
    sample_sha256: str
    order_sha256: str
    files: tuple[SnapshotFile, ...]  # in order of addition; a prefix of the next stage's files
    composition: Composition
    corpus_checksum: str
    context_mismatches: int  # linked pool articles whose sentences differ from a question's context paragraph


@dataclass
class SnapshotSet:
    """The plans of all requested stages plus the article texts they need."""

    sample: FrozenSample
    plans: list[SnapshotPlan]
    texts: dict[str, bytes]  # file name -> file bytes
    articles: dict[str, Article]  # file name -> article (for .bz2 shards)
    parameters: dict
    diagnostics: dict = field(default_factory=dict)


def _background_rank(seed: int, title: str) -> str:
    return hashlib.sha256(f"{seed}:{title}".encode("utf-8", "surrogatepass")).hexdigest()


def _context_article(title: str, sentences: tuple[str, ...]) -> Article:
    return Article("ctx-" + _title_hash(title), title, sentences)


class _Pool:
    """The article pool: first article per exact title, a second index by ``article_key`` for case/spacing
    variants, and the articles made from question contexts for titles the pool lacks."""

    def __init__(self, articles: Sequence[Article]) -> None:
        self.pool: dict[str, Article] = {}
        self.by_key: dict[str, list[Article]] = {}
        self.duplicates = 0
        for a in articles:
            if a.title in self.pool:
                self.duplicates += 1
                continue
            self.pool[a.title] = a
            self.by_key.setdefault(article_key(a.title), []).append(a)
        self.context_only: dict[str, Article] = {}
        self.ambiguous: set[str] = set()

    def resolve(self, title: str, sentences: tuple[str, ...] | None) -> Article | None:
        a = self.pool.get(title)
        if a is not None:
            return a
        cands = self.by_key.get(article_key(title))
        if cands:
            if len(cands) > 1:
                self.ambiguous.add(title)
            return cands[0]
        a = self.context_only.get(article_key(title))
        if a is not None:
            return a
        if sentences is None:
            return None
        a = _context_article(title, sentences)
        self.context_only[article_key(title)] = a
        return a


@dataclass
class _Linked:
    """Every population question's gold and context articles (missing gold titles, context texts that differ
    from the pool's), and the keys of every title a question links to."""

    keys: set[str] = field(default_factory=set)
    gold_of: dict[str, list[Article]] = field(default_factory=dict)
    missing_of: dict[str, list[str]] = field(default_factory=dict)
    context_of: dict[str, list[Article]] = field(default_factory=dict)
    mismatched: dict[str, set[str]] = field(default_factory=dict)


def _link_questions(questions: Sequence[Question], pool: _Pool) -> _Linked:
    """Resolve every population question once (in id order, so context-only texts do not depend on file order)."""
    linked = _Linked()
    for q in sorted(questions, key=lambda q: q.id):
        ctx_exact = {t: s for t, s in q.context}
        ctx_key = {article_key(t): s for t, s in reversed(q.context)}
        golds: list[Article] = []
        missing: list[str] = []
        for t in q.gold_titles:
            linked.keys.add(article_key(t))
            a = pool.resolve(t, ctx_exact.get(t, ctx_key.get(article_key(t))))
            if a is None:
                missing.append(t)
            else:
                golds.append(a)
                linked.keys.add(article_key(a.title))
        ctx: list[Article] = []
        bad: set[str] = set()
        for t, s in q.context:
            linked.keys.add(article_key(t))
            a = pool.resolve(t, s)
            assert a is not None
            ctx.append(a)
            linked.keys.add(article_key(a.title))
            if a.sentences != s:
                bad.add(a.title)
        linked.gold_of[q.id], linked.missing_of[q.id], linked.context_of[q.id] = golds, missing, ctx
        linked.mismatched[q.id] = bad
    return linked


class _Growth:
    """The nested stages built one after the other: the files in order of addition (carried across stages), the
    background drawn so far, and each file's bytes rendered once."""

    def __init__(
        self, universe: dict[str, Article], names: dict[str, str], candidates: list[Article], file_format: str = "text"
    ) -> None:
        self.universe, self.candidates, self.file_format = universe, candidates, file_format
        self.names = {t: n + SUFFIX[file_format] for t, n in names.items()}
        self.order: list[str] = []
        self.present: set[str] = set()
        self.n_background = 0
        self.texts: dict[str, bytes] = {}
        self.by_name: dict[str, Article] = {}

    def add(self, title: str) -> None:
        if title not in self.present:
            self.present.add(title)
            self.order.append(title)

    def file_bytes(self, a: Article) -> bytes:
        name = self.names[a.title]
        data = self.texts.get(name)
        if data is None:
            if self.file_format == "text":
                data = render_article(a.title, a.sentences).encode("utf-8", "surrogatepass")
            else:
                data = render(self.file_format, a.title, a.sentences)
            self.texts[name] = data
            self.by_name[name] = a
        return data

    def stage(
        self, stage: SampleStage, new_ids: Sequence[str], linked_of: _Linked, background_ratio: float
    ) -> SnapshotPlan:
        """Grow to ``stage``: the new questions' articles, then background up to the ratio; plan its files."""
        for qid in new_ids:
            for a in [*linked_of.gold_of[qid], *linked_of.context_of[qid]]:
                self.add(a.title)
        evidence = {a.title for qid in stage.ids for a in linked_of.gold_of[qid]}
        linked = {a.title for qid in stage.ids for a in (*linked_of.gold_of[qid], *linked_of.context_of[qid])}
        target = math.floor(background_ratio * len(linked) + 0.5)
        take = min(target, len(self.candidates))
        for a in self.candidates[self.n_background : take]:
            self.present.add(a.title)
            self.order.append(a.title)
        self.n_background = max(self.n_background, take)
        files = []
        for title in self.order:
            a = self.universe[title]
            data = self.file_bytes(a)
            role = "evidence" if title in evidence else "distractor" if title in linked else "background"
            files.append(
                SnapshotFile(self.names[title], title, a.id, role, hashlib.sha256(data).hexdigest(), len(data))
            )
        comp = Composition(
            articles=len(files),
            evidence=len(evidence),
            distractors=len(linked - evidence),
            background=len(files) - len(linked),
            background_target=target,
            background_pool=len(self.candidates),
            missing_gold=tuple(dict.fromkeys(t for qid in stage.ids for t in linked_of.missing_of[qid])),
        )
        return SnapshotPlan(
            name=f"D{stage.size}",
            size=stage.size,
            question_ids=stage.ids,
            sample_sha256=stage.sample_sha256,
            order_sha256=stage.order_sha256,
            files=tuple(files),
            composition=comp,
            corpus_checksum=corpus_checksum((f.name, f.sha256) for f in files),
            context_mismatches=len(set().union(*(linked_of.mismatched[qid] for qid in stage.ids))),
        )


def plan_snapshots(
    questions: Sequence[Question],
    articles: Sequence[Article],
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    seed: int = DEFAULT_SEED,
    background_ratio: float = DEFAULT_BACKGROUND_RATIO,
    sf_cap: int = DEFAULT_SF_CAP,
    max_name_bytes: int = MAX_NAME_BYTES,
    population_sha256: str | None = None,
    file_format: str = "text",
) -> SnapshotSet:
    """Plan D_n for every n in ``sizes`` from the population ``questions`` and the article pool, each article a
    file in ``file_format`` ("text", "pdf" or "docx").

    Deterministic in its inputs: the same questions, pool and parameters give the same files, names and
    checksums on every machine (for PDF and Word, with the same writer version and font, recorded in the
    manifest). Raises DataError if a size exceeds the population.
    """
    if background_ratio < 0 or not math.isfinite(background_ratio):
        raise DataError(f"background ratio must be a finite number >= 0, got {background_ratio}")
    if file_format not in FILE_FORMATS:
        raise DataError(f"--as {file_format!r}: choose one of {', '.join(FILE_FORMATS)}")
    sample = draw_samples(questions, sizes, seed=seed, sf_cap=sf_cap, population_sha256=population_sha256)
    pool = _Pool(articles)
    linked = _link_questions(questions, pool)
    universe: dict[str, Article] = dict(pool.pool)
    for a in pool.context_only.values():
        universe.setdefault(a.title, a)
    candidates = sorted(
        (a for a in pool.pool.values() if article_key(a.title) not in linked.keys),
        key=lambda a: (_background_rank(seed, a.title), a.title),
    )
    growth = _Growth(universe, assign_file_names(universe, max_bytes=max_name_bytes), candidates, file_format)
    plans: list[SnapshotPlan] = []
    for stage in sample.stages:
        new_ids = stage.ids[len(plans[-1].question_ids) if plans else 0 :]
        plans.append(growth.stage(stage, new_ids, linked, background_ratio))
    fonts = {}
    if file_format == "pdf":  # what the font cannot draw does not come back from the PDF: say how much that is
        lost = {n: undrawable(" ".join((a.title, *a.sentences))) for n, a in growth.by_name.items()}
        lost = {n: chars for n, chars in lost.items() if chars}
        fonts = {
            "articles_with_undrawable_characters": len(lost),
            "undrawable_characters": len(set().union(*lost.values())) if lost else 0,
            "undrawable_examples": sorted(lost)[:10],
        }
    return SnapshotSet(
        sample=sample,
        plans=plans,
        texts=growth.texts,
        articles=growth.by_name,
        parameters={
            "seed": seed,
            "sf_cap": sf_cap,
            "background_ratio": background_ratio,
            "max_name_bytes": max_name_bytes,
            # text snapshots keep the parameters they always had (their manifests stay byte-identical)
            **({"file_format": file_format, "writer": writer_info(file_format)} if file_format != "text" else {}),
        },
        diagnostics={
            "pool_articles": len(pool.pool),
            "pool_duplicate_titles_ignored": pool.duplicates,
            "context_only_articles": len(pool.context_only),
            "ambiguous_title_matches": sorted(pool.ambiguous),
            "population_linked_titles": len(linked.keys),
            **fonts,
        },
    )


# --------------------------------------------------------------------------- shards


def shard_path(index: int) -> str:
    """Official-dump layout: ``AA/wiki_00.bz2`` … ``AA/wiki_99.bz2``, ``AB/wiki_00.bz2`` …"""
    folder, item = divmod(index, 100)
    if folder >= 26 * 26:
        raise DataError("too many shards for the AA..ZZ layout; raise --shard-size")
    return f"{chr(65 + folder // 26)}{chr(65 + folder % 26)}/wiki_{item:02d}.bz2"


def _shard_groups(plans: Sequence[SnapshotPlan], shard_size: int) -> list[list[list[str]]]:
    """Per stage, the file names in each shard: the previous stage's shards, then new shards of new files."""
    out: list[list[list[str]]] = []
    prev: list[list[str]] = []
    prev_count = 0
    for plan in plans:
        new = [f.name for f in plan.files[prev_count:]]
        groups = prev + [new[i : i + shard_size] for i in range(0, len(new), shard_size)]
        out.append(groups)
        prev, prev_count = groups, len(plan.files)
    return out


def shard_bytes(names: Sequence[str], articles: dict[str, Article]) -> bytes:
    lines = []
    for name in names:
        a = articles[name]
        url = "https://en.wikipedia.org/wiki/" + quote(a.title.replace(" ", "_"), safe="", errors="surrogatepass")
        lines.append(
            json.dumps({"id": a.id, "url": url, "title": a.title, "text": list(a.sentences)}, ensure_ascii=False)
        )
    return bz2.compress(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), 9)


# --------------------------------------------------------------------------- building


@dataclass(frozen=True)
class BuildResult:
    plan: SnapshotPlan
    status: str  # "built" | "existing" | "recovered"
    seconds: float
    manifest_path: Path


def read_manifest(path: str | os.PathLike[str]) -> dict:
    """A stage manifest as a dict; raises DataError when it is missing or not a snapshot manifest."""
    return read_json_manifest(path, SNAPSHOT_FORMAT, "snapshot", DataError)


def _manifest(
    snap: SnapshotSet,
    index: int,
    inputs: dict | None,
    shards: dict | None,
) -> dict:
    plan = snap.plans[index]
    prev = snap.plans[index - 1] if index else None
    return {
        "format": SNAPSHOT_FORMAT,
        "name": plan.name,
        "size": plan.size,
        "folder": plan.name,
        "sample": {
            "name": f"G{plan.size}",
            "seed": snap.parameters["seed"],
            "sf_cap": snap.parameters["sf_cap"],
            "sample_sha256": plan.sample_sha256,
            "order_sha256": plan.order_sha256,
            "question_ids": list(plan.question_ids),
        },
        "composition": plan.composition.to_json(),
        "corpus_checksum": plan.corpus_checksum,
        "grows_from": (
            None
            if prev is None
            else {"name": prev.name, "corpus_checksum": prev.corpus_checksum, "files": len(prev.files)}
        ),
        "files_added": len(plan.files) - (len(prev.files) if prev else 0),
        "layout": _layout(snap.parameters.get("file_format", "text")),
        "parameters": dict(snap.parameters),
        "inputs": inputs or {},
        "diagnostics": {**snap.diagnostics, "context_mismatches": plan.context_mismatches},
        "shards": shards,
        "files": [f.to_json() for f in plan.files],
    }


_CHECKSUM_RULE = "sha256 of '<sha256>  <name>\\n' lines sorted by name bytes"


def _layout(file_format: str) -> dict:
    """The manifest's ``layout``: how a file holds its article."""
    if file_format == "text":
        return {
            "encoding": "utf-8",
            "title_line": 1,
            "sentence_line_offset": SENTENCE_LINE_OFFSET,
            "checksum_rule": _CHECKSUM_RULE,
        }
    return {
        "format": file_format,
        "suffix": SUFFIX[file_format],
        "title": "the document's title metadata (PDF Title, Word core properties) and its first line",
        "sentences": "one paragraph per sentence, in order (empty sentences kept as empty paragraphs)",
        "checksum_rule": _CHECKSUM_RULE,
    }


def snapshot_format(manifest: dict) -> str:
    """The file format of a stage's files ("text" for manifests written before other formats existed)."""
    return (manifest.get("layout") or {}).get("format", "text")


def _clear_partials(out: Path, name: str) -> None:
    """Remove temporary folders a killed build of this stage left behind (only our own naming pattern)."""
    for p in out.glob(f".{name}.partial-*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)


def _write_folder(final: Path, files: Iterable[tuple[str, bytes]]) -> None:
    tmp = final.parent / f".{final.name}.partial-{os.getpid()}"
    tmp.mkdir()
    try:
        for rel, data in files:
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            # "x": a name that collides with an existing file (case-insensitive file system) fails loudly
            with open(target, "xb") as fh:
                fh.write(data)
        os.rename(tmp, final)
    except FileExistsError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DataError(f"{final}: two articles map to the same file on this file system ({exc.filename})") from None
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DataError(f"{final}: cannot write snapshot: {exc.strerror or exc}") from None


def _folder_problems(folder: Path, expected: dict[str, str], label: str) -> list[str]:
    """Differences between a folder's files and ``expected`` (relative posix name -> sha256)."""
    problems: list[str] = []
    on_disk: set[str] = set()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for fname in sorted(files):
            rel = Path(root, fname).relative_to(folder).as_posix()
            on_disk.add(rel)
    for rel in sorted(on_disk - set(expected)):
        problems.append(f"{label}/{rel}: file not in the manifest (added)")
    for rel in sorted(set(expected) - on_disk):
        problems.append(f"{label}/{rel}: file in the manifest is missing (removed)")
    for rel in sorted(on_disk & set(expected)):
        try:
            sha = sha256_file(folder / rel)
        except OSError as exc:
            problems.append(f"{label}/{rel}: unreadable: {exc.strerror or exc}")
            continue
        if sha != expected[rel]:
            problems.append(f"{label}/{rel}: content changed (sha256 {sha[:12]}…, manifest {expected[rel][:12]}…)")
    return problems


def build_snapshots(
    snap: SnapshotSet,
    out_dir: str | os.PathLike[str],
    *,
    shards: bool = False,
    shard_size: int = DEFAULT_SHARD_SIZE,
    inputs: dict | None = None,
    on_stage: Callable[[BuildResult], None] | None = None,
) -> list[BuildResult]:
    """Write every planned stage under ``out_dir`` (``D<n>/`` + ``D<n>.manifest.json``, and with ``shards``
    also ``D<n>-shards/AA/wiki_00.bz2 …``).

    Existing stages are checked against the plan and against their manifest and kept; a stage that differs
    raises DataError (nothing is edited or removed). Raises DataError on write failures, leaving no partial
    stage folder behind.
    """
    if shard_size < 1:
        raise DataError(f"--shard-size must be >= 1, got {shard_size}")
    if shards and snap.parameters.get("file_format", "text") != "text":
        raise DataError("--shards writes the articles as text shards; build them with a text snapshot (no --as)")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{out}: cannot create output folder: {exc.strerror or exc}") from None
    groups = _shard_groups(snap.plans, shard_size) if shards else None
    results: list[BuildResult] = []
    for i, plan in enumerate(snap.plans):
        t0 = time.perf_counter()
        folder = out / plan.name
        manifest_path = out / f"{plan.name}.manifest.json"
        expected = {f.name: f.sha256 for f in plan.files}
        _clear_partials(out, plan.name)
        shard_info = None
        stage_inputs = inputs
        if groups is not None:
            shard_info = _build_shards(out, plan, groups[i], snap.articles, shard_size)
        if folder.exists():
            if manifest_path.exists():
                old = read_manifest(manifest_path)
                old_files = {f["name"]: f["sha256"] for f in old.get("files", [])}
                if old_files != expected or old.get("sample", {}).get("order_sha256") != plan.order_sha256:
                    changed = len(set(old_files.items()) ^ set(expected.items()))
                    raise DataError(
                        f"{folder}: exists and differs from the snapshot these inputs produce "
                        f"({changed} file entries differ); refusing to edit or remove files — use a new --out"
                    )
                status = "existing"
                if shard_info is None:
                    shard_info = old.get("shards")
                if _same_input_hashes(old.get("inputs") or {}, inputs or {}):
                    stage_inputs = old.get("inputs")  # keep the paths recorded at build time
            else:
                status = "recovered"  # a build killed between the folder rename and the manifest write
            problems = _folder_problems(folder, expected, plan.name)
            if problems:
                raise DataError(
                    f"{folder}: does not match {'its manifest' if status == 'existing' else 'the plan'}: "
                    f"{problems[0]}" + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
                )
        else:
            status = "built"
            _write_folder(folder, ((f.name, snap.texts[f.name]) for f in plan.files))
        manifest = _manifest(snap, i, stage_inputs, shard_info)
        if status != "existing" or read_manifest(manifest_path) != manifest:
            write_json_atomic(manifest_path, manifest)
        result = BuildResult(plan, status, time.perf_counter() - t0, manifest_path)
        results.append(result)
        if on_stage is not None:
            on_stage(result)
    return results


def _same_input_hashes(a: dict, b: dict) -> bool:
    return {k: v.get("sha256") for k, v in a.items()} == {k: v.get("sha256") for k, v in b.items()}


def _build_shards(
    out: Path, plan: SnapshotPlan, groups: list[list[str]], articles: dict[str, Article], shard_size: int
) -> dict:
    folder = out / f"{plan.name}-shards"
    blobs = [(shard_path(k), shard_bytes(g, articles), len(g)) for k, g in enumerate(groups)]
    expected = {rel: hashlib.sha256(data).hexdigest() for rel, data, _ in blobs}
    _clear_partials(out, folder.name)
    if folder.exists():
        problems = _folder_problems(folder, expected, folder.name)
        if problems:
            raise DataError(
                f"{folder}: exists and differs from the shards these inputs produce: {problems[0]}"
                + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
            )
    else:
        _write_folder(folder, ((rel, data) for rel, data, _ in blobs))
    return {
        "folder": folder.name,
        "articles_per_shard": shard_size,
        "files": [{"path": rel, "sha256": expected[rel], "articles": n} for rel, _, n in blobs],
    }


# --------------------------------------------------------------------------- verification


@dataclass
class VerifyReport:
    """The outcome of ``verify_snapshots``: empty ``problems`` means every check passed."""

    stages: list[str] = field(default_factory=list)
    files_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.stages) and not self.problems


def _stage_size(path: Path) -> int:
    m = re.fullmatch(r"D(\d+)\.manifest\.json", path.name)
    return int(m.group(1)) if m else -1


def verify_snapshots(out_dir: str | os.PathLike[str]) -> VerifyReport:
    """Check every ``D<n>.manifest.json`` under ``out_dir`` against the files on disk.

    Checks: each listed file exists with the recorded sha256; no unlisted file is in the folder; the recorded
    corpus checksum matches the listed files; composition counts match the roles; each stage holds the
    previous one's files byte-identical (append-only) and names its checksum in ``grows_from``; shard files
    match their hashes. Problems are collected, not raised.
    """
    out = Path(out_dir)
    report = VerifyReport()
    if not out.is_dir():
        report.problems.append(f"{out}: no such folder")
        return report
    manifests = sorted((p for p in out.glob("D*.manifest.json") if _stage_size(p) > 0), key=_stage_size)
    if not manifests:
        report.problems.append(f"{out}: no D<n>.manifest.json snapshot manifests found")
        return report
    prev: dict | None = None
    for path in manifests:
        try:
            m = read_manifest(path)
            name = m["name"]
            files = {f["name"]: f["sha256"] for f in m["files"]}
            roles = [f["role"] for f in m["files"]]
            comp = m["composition"]
        except (DataError, KeyError, TypeError) as exc:
            report.problems.append(f"{path.name}: {exc}")
            prev = None
            continue
        report.stages.append(name)
        sample = m.get("sample") or {}
        if ids_sha256(sample.get("question_ids") or []) != sample.get("order_sha256"):
            report.problems.append(
                f"{path.name}: question_ids do not match the recorded order_sha256 (manifest edited)"
            )
        if len(files) != len(m["files"]):
            report.problems.append(f"{path.name}: a file name is listed twice")
        if corpus_checksum(files.items()) != m.get("corpus_checksum"):
            report.problems.append(f"{path.name}: corpus_checksum does not match the listed files (manifest edited)")
        counts = {r: roles.count(r) for r in ROLES}
        for key, role in (("evidence", "evidence"), ("distractors", "distractor"), ("background", "background")):
            if comp.get(key) != counts[role]:
                report.problems.append(f"{path.name}: composition {key}={comp.get(key)} but {counts[role]} files")
        if comp.get("articles") != len(files):
            report.problems.append(f"{path.name}: composition articles={comp.get('articles')} but {len(files)} files")
        folder = out / m.get("folder", name)
        if not folder.is_dir():
            report.problems.append(f"{name}: snapshot folder {folder} is missing")
        else:
            report.problems.extend(_folder_problems(folder, files, name))
            report.files_checked += len(files)
        if prev is not None:
            grows = m.get("grows_from") or {}
            if grows.get("corpus_checksum") != prev["corpus_checksum"]:
                report.problems.append(
                    f"{name}: grows_from does not name {prev['name']}'s corpus checksum (not built from it)"
                )
            now = files
            for f in prev["files"]:
                if f["name"] not in now:
                    report.problems.append(f"{name}: not append-only: {prev['name']}/{f['name']} was removed")
                elif now[f["name"]] != f["sha256"]:
                    report.problems.append(f"{name}: not append-only: {prev['name']}/{f['name']} was edited")
        shards = m.get("shards")
        if shards:
            sfolder = out / shards["folder"]
            expected = {s["path"]: s["sha256"] for s in shards["files"]}
            if not sfolder.is_dir():
                report.problems.append(f"{name}: shard folder {sfolder} is missing")
            else:
                report.problems.extend(_folder_problems(sfolder, expected, shards["folder"]))
                report.files_checked += len(expected)
        prev = m
    return report
