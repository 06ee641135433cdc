"""The surveyed documents as a sequence, each read from its file only when the agent reads it."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Iterator, Sequence

from lens._config import ReaderSettings
from lens.reader._columns import DocStat
from lens.reader._documents import Document
from lens.reader._read import read_files

__all__ = ["DocumentTable"]


class DocumentTable(Sequence[Document]):
    """The surveyed documents, each read from its file when first asked for (a few files kept in memory)."""

    def __init__(self, root: Path, root_real: str, settings: ReaderSettings, stats: Sequence[DocStat]):
        self.root, self.root_real, self.settings, self.stats = root, root_real, settings, stats
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
