"""HotpotQA loaders: questions (official distractor / fullwiki JSON), Wikipedia abstracts, prediction files.

Every loader validates what it reads and raises one ``DataError`` naming the file, the record (0-based index
in the JSON array, or in the JSONL/shard file with its 1-based line) and the field that is wrong, e.g.
``questions.json: record 17: field "answer" missing``. Truncated JSON is reported at the record it cuts.

Titles compare case-insensitively everywhere in the harness: compare ``article_key(a) == article_key(b)``.
"""

from __future__ import annotations

import bz2
import io
import json
import os
import unicodedata
from dataclasses import dataclass
from json.decoder import WHITESPACE  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, Iterator

from lens import LensError
from lens.parts import split_sentences

__all__ = [
    "DataError",
    "Question",
    "Article",
    "article_key",
    "load_questions",
    "load_articles",
    "iter_articles",
    "iter_records",
    "shard_files",
    "load_predictions",
]


class DataError(LensError, ValueError):
    """A data file is missing, unreadable or malformed; the message names file, record and field."""


def article_key(title: str) -> str:
    """The key under which two titles are the same article: NFC, case-folded, whitespace collapsed. Scoring
    (Ev.Rec, supporting facts) and snapshots compare articles by it; it is exact on purpose — "Ed Wood (film)"
    and "Ed Wood" are two articles. (``lens``'s own title key is a looser name key for matching names in text:
    accents folded, punctuation dropped.)"""
    return " ".join(unicodedata.normalize("NFC", title).casefold().split())


@dataclass(frozen=True)
class Question:
    """One HotpotQA question. ``supporting_facts`` are (title, sent_id); ``context`` is (title, sentences)."""

    id: str
    question: str
    answer: str
    type: str
    level: str
    supporting_facts: tuple[tuple[str, int], ...]
    context: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def gold_titles(self) -> tuple[str, ...]:
        """Unique supporting-fact titles (compared by ``article_key``) in order of first appearance."""
        seen: set[str] = set()
        out: list[str] = []
        for title, _ in self.supporting_facts:
            key = article_key(title)
            if key not in seen:
                seen.add(key)
                out.append(title)
        return tuple(out)


@dataclass(frozen=True)
class Article:
    """One Wikipedia abstract: id, title and its sentences (as stored, leading spaces included)."""

    id: str
    title: str
    sentences: tuple[str, ...]


# --------------------------------------------------------------------------- helpers


# JSON's names for Python's parsed types (bool before int: a bool is an int)
_JSON_KINDS = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _kind(value: Any) -> str:
    return next((name for t, name in _JSON_KINDS if isinstance(value, t)), type(value).__name__)


def _fact_pairs(items: list, where: str) -> list[tuple[str, int]]:
    """``[[title, sentence id], ...]`` as tuples; an item of another shape is an error naming ``where`` and its index."""
    pairs: list[tuple[str, int]] = []
    for j, item in enumerate(items):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not isinstance(item[1], int)
            or isinstance(item[1], bool)
        ):
            raise DataError(f"{where} item {j} is {json.dumps(item)[:80]}, expected [title, sentence id]")
        pairs.append((item[0], item[1]))
    return pairs


def _field(obj: dict, name: str, where: str) -> Any:
    if name not in obj:
        raise DataError(f'{where}: field "{name}" missing')
    return obj[name]


def _string(obj: dict, name: str, where: str, *, nonempty: bool = False) -> str:
    value = _field(obj, name, where)
    if not isinstance(value, str):
        raise DataError(f'{where}: field "{name}" is {_kind(value)}, expected string')
    if nonempty and not value.strip():
        raise DataError(f'{where}: field "{name}" is empty')
    return value


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a folder, expected a file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 (byte {exc.start})") from None


def _iter_json_array(text: str, path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """Yield (index, record) from a JSON array, decoding record by record so errors name the record."""
    decoder = json.JSONDecoder()
    n = len(text)
    i = WHITESPACE.match(text, 0).end()
    if i >= n:
        raise DataError(f"{path}: empty file, expected a JSON array of {what}")
    if text[i] != "[":
        raise DataError(f"{path}: expected a JSON array of {what}, found {_first_kind(text[i])}")
    i = WHITESPACE.match(text, i + 1).end()
    if i < n and text[i] == "]":
        return
    index = 0
    while True:
        if i >= n:
            raise DataError(f"{path}: record {index}: file ends early (truncated JSON)")
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            cut = " (truncated JSON)" if exc.pos >= n - 1 or "Unterminated" in exc.msg else ""
            raise DataError(
                f"{path}: record {index}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{cut}"
            ) from None
        yield index, obj
        i = WHITESPACE.match(text, end).end()
        if i >= n:
            raise DataError(f"{path}: record {index}: file ends before the closing ']' (truncated JSON)")
        if text[i] == ",":
            i = WHITESPACE.match(text, i + 1).end()
            index += 1
            continue
        if text[i] == "]":
            rest = WHITESPACE.match(text, i + 1).end()
            if rest < n:
                raise DataError(f"{path}: unexpected data after the closing ']' (offset {rest})")
            return
        line = text.count("\n", 0, i) + 1
        raise DataError(f"{path}: record {index}: expected ',' or ']' after it at line {line}")


def _first_kind(ch: str) -> str:
    return {"{": "an object", '"': "a string"}.get(ch, f"{ch!r}")


# --------------------------------------------------------------------------- questions


def _question(obj: Any, where: str) -> Question:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: is {_kind(obj)}, expected a question object")
    qid = _string(obj, "_id", where, nonempty=True)
    question = _string(obj, "question", where)
    answer = _string(obj, "answer", where)
    qtype = _string(obj, "type", where)
    level = _string(obj, "level", where)

    raw_sf = _field(obj, "supporting_facts", where)
    if not isinstance(raw_sf, list):
        raise DataError(f'{where}: field "supporting_facts" is {_kind(raw_sf)}, expected array')
    facts = _fact_pairs(raw_sf, f'{where}: field "supporting_facts"')
    for j, (_, sent) in enumerate(facts):
        if sent < 0:
            raise DataError(f'{where}: field "supporting_facts" item {j} has negative sentence id {sent}')

    raw_ctx = _field(obj, "context", where)
    if not isinstance(raw_ctx, list):
        raise DataError(f'{where}: field "context" is {_kind(raw_ctx)}, expected array')
    context: list[tuple[str, tuple[str, ...]]] = []
    for j, item in enumerate(raw_ctx):
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
            raise DataError(
                f'{where}: field "context" item {j} is {json.dumps(item)[:80]}, expected [title, [sentences]]'
            )
        sents = item[1]
        if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise DataError(f'{where}: field "context" item {j} ("{item[0][:60]}"): sentences must be strings')
        context.append((item[0], tuple(sents)))
    return Question(qid, question, answer, qtype, level, tuple(facts), tuple(context))


def load_questions(path: str | os.PathLike[str]) -> list[Question]:
    """Questions from an official HotpotQA JSON file (distractor or fullwiki layout), in file order.

    Requires ``_id``, ``question``, ``answer``, ``type``, ``level``, ``supporting_facts`` and ``context`` on
    every record; ids must be unique. Raises DataError naming file, record index (0-based) and field.
    """
    p = Path(path)
    out: list[Question] = []
    seen: dict[str, int] = {}
    for index, obj in _iter_json_array(_read_text(p), p, "question records"):
        q = _question(obj, f"{p}: record {index}")
        if q.id in seen:
            raise DataError(f'{p}: record {index}: field "_id" {q.id!r} repeats record {seen[q.id]}')
        seen[q.id] = index
        out.append(q)
    return out


# --------------------------------------------------------------------------- articles


def _article(obj: Any, where: str) -> Article:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: is {_kind(obj)}, expected an article object")
    raw_id = _field(obj, "id", where)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise DataError(f'{where}: field "id" is {_kind(raw_id)}, expected string')
    title = _string(obj, "title", where, nonempty=True)
    if "sentences" in obj:
        sents = obj["sentences"]
        if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise DataError(f'{where}: field "sentences" must be an array of strings')
        sentences = tuple(sents)
    else:
        text = _field(obj, "text", where)
        if isinstance(text, str):
            sentences = tuple(s.text for s in split_sentences(text))
        elif isinstance(text, list):
            flat: list[str] = []
            for j, item in enumerate(text):  # official dumps: sentences, or paragraphs of sentences
                if isinstance(item, str):
                    flat.append(item)
                elif isinstance(item, list) and all(isinstance(s, str) for s in item):
                    flat.extend(item)
                else:
                    raise DataError(f'{where}: field "text" item {j} is {_kind(item)}, expected string')
            sentences = tuple(flat)
        else:
            raise DataError(f'{where}: field "text" is {_kind(text)}, expected array of sentences or string')
    return Article(str(raw_id), title, sentences)


SHARD_SUFFIXES = (".bz2", ".jsonl", ".ndjson")


def shard_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Article shards anywhere under ``folder`` (``.bz2``, ``.jsonl``, ``.ndjson``; hidden entries skipped),
    sorted by relative path; empty when there are none."""
    folder = Path(folder)
    files = [
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and p.name.lower().endswith(SHARD_SUFFIXES)
    ]
    files.sort(key=lambda p: p.relative_to(folder).as_posix())
    return files


def iter_records(path: str | os.PathLike[str], data: bytes | None = None) -> Iterator[tuple[int, Article]]:
    """(line number, article) for every record of one JSONL file or ``.bz2`` shard — line numbers count every
    line from 1, blank ones included, as ``lens``'s reader numbers a container's records. ``data``: the file's
    bytes when the caller already read them (the file is not opened again)."""
    path = Path(path)
    compressed = path.name.lower().endswith(".bz2")
    index = -1
    lineno = 0
    try:
        if data is not None:
            fh = bz2.open(io.BytesIO(data), "rb") if compressed else io.BytesIO(data)
        else:
            fh = bz2.open(path, "rb") if compressed else open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                index += 1
                where = f"{path}: record {index} (line {lineno})"
                try:
                    obj = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    raise DataError(f"{where}: not UTF-8 (byte {exc.start})") from None
                except json.JSONDecodeError as exc:
                    cut = " (truncated?)" if not raw.endswith(b"\n") else ""
                    raise DataError(f"{where}: malformed JSON at column {exc.colno}: {exc.msg}{cut}") from None
                yield lineno, _article(obj, where)
        except EOFError:
            raise DataError(f"{path}: compressed stream ends early after line {lineno} (truncated .bz2)") from None
        except OSError as exc:  # corrupt .bz2 data
            raise DataError(f"{path}: unreadable after line {lineno}: {exc}") from None


def iter_articles(path: str | os.PathLike[str]) -> Iterator[Article]:
    """Articles one by one from a JSONL file, a ``.bz2`` shard, or a folder of shards (sorted by path)."""
    p = Path(path)
    if p.is_dir():
        files = shard_files(p)
        if not files:
            raise DataError(f"{p}: folder holds no .bz2 or .jsonl article shards")
    elif not p.exists():
        raise DataError(f"{p}: no such file or folder")
    else:
        files = [p]
    for f in files:
        yield from (a for _, a in iter_records(f))


def load_articles(path: str | os.PathLike[str]) -> list[Article]:
    """All articles from a JSONL file (``id``, ``title``, ``text``, ``sentences``), a ``.bz2`` shard of one
    JSON object per line (official layout: ``id``, ``url``, ``title``, ``text`` as a sentence list), or a
    folder of such shards. Sentences come from ``sentences`` when present, else from ``text`` (a list, nested
    paragraph lists flattened, or a string split into sentences). Raises DataError naming the record."""
    articles = list(iter_articles(path))
    if not articles:
        raise DataError(f"{path}: no articles")
    return articles


# --------------------------------------------------------------------------- predictions


def load_predictions(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """A prediction file in the official layout ``{"answer": {id: str}, "sp": {id: [[title, sent_id], ...]}}``.

    Returns ``{"answer": {...}, "sp": {...}}``; a section the file lacks is returned as absent (not empty),
    so callers can tell "no supporting facts predicted at all" from "missing for some questions".
    """
    p = Path(path)
    text = _read_text(p)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise DataError(f'{p}: is {_kind(obj)}, expected an object with "answer" and "sp"')
    if "answer" not in obj and "sp" not in obj:
        raise DataError(f'{p}: neither "answer" nor "sp" present')
    out: dict[str, dict[str, Any]] = {}
    if "answer" in obj:
        answers = obj["answer"]
        if not isinstance(answers, dict):
            raise DataError(f'{p}: field "answer" is {_kind(answers)}, expected object of id -> answer')
        for qid, value in answers.items():
            if not isinstance(value, str):
                raise DataError(f"{p}: answer for {qid!r} is {_kind(value)}, expected string")
        out["answer"] = dict(answers)
    if "sp" in obj:
        sps = obj["sp"]
        if not isinstance(sps, dict):
            raise DataError(f'{p}: field "sp" is {_kind(sps)}, expected object of id -> [[title, sent_id]]')
        clean: dict[str, list[tuple[str, int]]] = {}
        for qid, facts in sps.items():
            if not isinstance(facts, list):
                raise DataError(f"{p}: sp for {qid!r} is {_kind(facts)}, expected array of [title, sent_id]")
            clean[qid] = _fact_pairs(facts, f"{p}: sp for {qid!r}")
        out["sp"] = clean
    return out
