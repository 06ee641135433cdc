"""Regenerate the demo corpus's ``.bz2`` JSONL shard from its readable source.

Usage: python corpora/build_demo_shard.py [--check]

``corpora/demo_shard.jsonl`` (beside this script, outside the demo folder so it is not read twice) holds one
article per line in the HotpotQA abstracts layout: ``id``, ``url``, ``title``, ``text`` (a list of sentences).
This writes it, validated and normalised, to ``corpora/demo/wiki/wiki_00.bz2``. bzip2 output carries no
timestamp, so the shard is byte-for-byte reproducible; ``--check`` exits 1 if the checked-in shard is stale.
"""

from __future__ import annotations

import bz2
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "demo_shard.jsonl"
SHARD = HERE / "demo" / "wiki" / "wiki_00.bz2"


def build() -> bytes:
    lines = []
    for n, raw in enumerate(SOURCE.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        obj = json.loads(raw)
        for key in ("id", "url", "title", "text"):
            if key not in obj:
                raise SystemExit(f"{SOURCE.name}:{n}: missing field {key!r}")
        if not isinstance(obj["text"], list) or not all(isinstance(s, str) for s in obj["text"]):
            raise SystemExit(f'{SOURCE.name}:{n}: field "text" must be a list of sentences')
        record = {"id": obj["id"], "url": obj["url"], "title": obj["title"], "text": obj["text"]}
        lines.append(json.dumps(record, ensure_ascii=False))
    return bz2.compress(("\n".join(lines) + "\n").encode("utf-8"), compresslevel=9)


def main() -> int:
    data = build()
    if "--check" in sys.argv[1:]:
        current = SHARD.read_bytes() if SHARD.exists() else b""
        if current != data:
            print(f"{SHARD} is stale; run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    SHARD.parent.mkdir(parents=True, exist_ok=True)
    SHARD.write_bytes(data)
    print(f"wrote {SHARD.relative_to(HERE.parent)} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
