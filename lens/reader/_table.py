"""The surveyed documents as a sequence, each read from its file only when the agent reads it."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Iterator, Sequence

from lens._config import ReaderSettings
from lens._files import sha256_hex
from lens.reader._columns import DocStat
from lens.reader._documents import Document, _suffix
from lens.reader._folder import _pack_sig
from lens.reader._open import _signature
from lens.reader._read import read_files
from lens.reader._store import StatsStore, StoreError
from lens.reader.formats import format_of

__all__ = ["DocumentTable"]


class DocumentTable(Sequence[Document]):
    """The surveyed documents, each read from its file when first asked for (a few files kept in memory). A unit
    of a document format (a PDF page, …) comes from the text the store kept when its file was extracted, while
    the file's stat signature is the one it was extracted under: an unchanged file is never parsed again."""

    def __init__(
        self,
        root: Path,
        root_real: str,
        settings: ReaderSettings,
        stats: Sequence[DocStat],
        store: StatsStore | None = None,
    ):
        self.root, self.root_real, self.settings, self.stats = root, root_real, settings, stats
        self.store = store
        self._files: OrderedDict[str, dict[str, Document]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.stats)

    def __iter__(self) -> Iterator[Document]:
        return (self[i] for i in range(len(self.stats)))

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self.stats)))]
        st = self.stats[i]
        kept = self._kept_unit(i, st) if st.line is not None and format_of(_suffix(st.path)) else None
        if kept is not None:
            return kept
        with self._lock:
            docs = self._files.get(st.path)
            if docs is None:
                full = os.path.join(self.root, st.path)
                (res,) = read_files([(full, st.path)], self.settings, self.root_real)
                docs = {d.doc_id: d for d in res.documents}
                self._files[st.path] = docs
                if len(self._files) > 64:
                    self._files.popitem(last=False)
            else:
                self._files.move_to_end(st.path)
        doc = docs.get(st.doc_id)
        if doc is None:  # changed or gone since the survey: the document as surveyed, its text its title
            doc = Document(
                doc_id=st.doc_id, path=st.path, title=st.title, text=st.title, sha256=st.sha256, line=st.line
            )
        return doc

    def _kept_unit(self, i: int, st: DocStat) -> Document | None:
        """Document ``i``, a unit, from the text the store kept, if its file is unchanged since (else None: read
        the file)."""
        ids = getattr(self.stats, "ids", None)
        if self.store is None or ids is None or ids[i] < 0:
            return None
        try:
            kept = self.store.unit(int(ids[i]))
            now = _pack_sig(_signature(os.stat(os.path.join(self.root, st.path))))
        except (StoreError, OSError):  # a damaged store, a file gone: reading the file says what is there now
            return None
        if kept is None or kept[0] != now:
            return None
        text, where, lines = kept[1].get("text"), kept[1].get("location"), kept[1].get("lines") or []
        if not isinstance(text, str) or sha256_hex(text) != st.sha256:  # not what the survey counted
            return None
        return Document(
            doc_id=st.doc_id,
            path=st.path,
            title=st.title,
            text=text,
            sha256=st.sha256,
            line=st.line,
            kind="unit",
            location=where,
            line_locations=tuple(lines),
        )
