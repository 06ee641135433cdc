"""The bundled demo corpus (``corpora/demo``): every file is readable, the shard matches its source, and each
question listed in QUESTIONS.md is answerable from the documents it cites.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from lens.reader._corpus import scan_corpus

CORPORA = Path(__file__).resolve().parents[2] / "corpora"
DEMO = CORPORA / "demo"


@pytest.fixture(scope="module")
def scan():
    return scan_corpus(DEMO)


@pytest.fixture(scope="module")
def docs(scan):
    return {d.doc_id: d for d in scan.documents}


def question_rows() -> dict[str, list[str]]:
    """``{"B1": [cells...], ...}`` from the tables of QUESTIONS.md."""
    rows = {}
    for line in (DEMO / "QUESTIONS.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*([BCL]\d)\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def test_demo_corpus_is_read_completely_except_its_answer_key(scan):
    on_disk = [p for p in DEMO.rglob("*") if p.is_file()]
    # .lensignore itself is hidden; QUESTIONS.md (the answer key) is excluded by it
    assert scan.skipped == {"hidden": 1, "ignored": 1} and scan.problems == []
    assert scan.files == len(on_disk) - 2
    assert not any(d.path == "QUESTIONS.md" for d in scan.documents)


def test_demo_corpus_mixes_file_kinds(scan):
    kinds = {Path(d.path).suffix or "(none)" for d in scan.documents}
    assert {".md", ".txt", "(none)", ".html", ".csv", ".bz2"} <= kinds
    assert sum(d.path.endswith(".bz2") for d in scan.documents) >= 5


def test_demo_corpus_is_small():
    assert sum(p.stat().st_size for p in DEMO.rglob("*") if p.is_file()) < 200_000


def test_demo_shard_matches_its_readable_source():
    spec = importlib.util.spec_from_file_location("build_demo_shard", CORPORA / "build_demo_shard.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    assert builder.build() == (DEMO / "wiki" / "wiki_00.bz2").read_bytes()


def test_questions_cover_the_required_kinds():
    ids = question_rows()
    assert sum(k.startswith("B") for k in ids) >= 3
    assert sum(k.startswith("C") for k in ids) >= 2
    assert sum(k.startswith("L") for k in ids) >= 2


def test_every_cited_source_is_a_document(docs):
    for qid, cells in question_rows().items():
        refs = re.findall(r"`([^`]+)`", " ".join(cells[2:]))
        assert refs, qid
        for ref in refs:
            # a document id, or a document format's file (its documents are its units: path#u<k>)
            assert ref in docs or any(d.path == ref for d in docs.values()), f"{qid}: {ref} is not a document"


# The facts each answer rests on, as they appear in the cited document.
FACTS = {
    "B1": [
        ("ferries/fleet-notes.md", "built by Osk & Tally\nShipwrights"),
        ("history/osk-and-tally.txt", "founded in 1887"),
    ],
    "B2": [
        ("archive/seed-archive.html", "granary on Skerrow Island"),
        ("wiki/wiki_00.bz2#L1", "designed by the engineer Maud Brannock"),
    ],
    "B3": [
        ("Harrowmouth Festival Programme 2019", "Tidewater Suite by Corin Vale"),
        ("wiki/wiki_00.bz2#L3", "played the cello"),
    ],
    "B4": [("wiki/wiki_00.bz2#L1", "Maud Brannock"), ("wiki/wiki_00.bz2#L2", "Maud Brannock (1838")],
    "C1": [("lighthouses/calder-point-light.md", "27 metres"), ("wiki/wiki_00.bz2#L1", "31 metres")],
    "C2": [
        ("archive/seed-archive.html", "founded in 1964"),
        ("Harrowmouth Festival Programme 2019", "first held in 1958"),
    ],
    "C3": [
        ("wiki/wiki_00.bz2#L1", "first lit in 1874"),
        ("lighthouses/calder-point-light.md", "first lit on 1 November 1869"),
    ],
    "C4": [
        ("history/osk-and-tally.txt", "north end of Harrowmouth"),
        ("history/tally-brothers-boatworks.txt", "in 1902 in Dunmere"),
    ],
    # a table row read with its header (the CSV's one unit: its rows)
    "L1": [
        (
            "ferries/fleet-register.csv#u1",
            "vessel: Brisk Tern · entered_service: 1974 · route: Harrowmouth - Skerrow Island · length_m: 38.5",
        )
    ],
    "L2": [("archive/seed-archive.html", "Coastal barley: 212 varieties, the largest collection")],
    "L3": [("lighthouses/calder-point-light.md", "first keeper was\nAgnes Rook")],
    "L4": [("reports/harbour-board-annual-report-2023.pdf#u2", "It removed 18,400 cubic metres\nof silt")],
    "L5": [("data/lighthouse-register.xlsx#u1", "Name: Dunmere Head Light · Tower height (m): 22 · First lit: 1891")],
}


@pytest.mark.parametrize("qid", sorted(FACTS))
def test_answer_is_supported_by_its_cited_documents(qid, docs):
    rows = question_rows()
    assert qid in rows
    for doc_id, fact in FACTS[qid]:
        cited = doc_id.split("#u", 1)[0]  # a unit is cited by its file
        assert cited in " ".join(rows[qid]), f"{qid}: QUESTIONS.md does not cite {cited}"
        assert fact in docs[doc_id].text, f"{qid}: {doc_id} lacks {fact!r}"


@pytest.mark.parametrize(
    "qid,bridge_entity",
    [("B1", "Osk"), ("B2", "Skerrow"), ("B3", "Corin Vale"), ("B4", "Maud Brannock")],
)
def test_bridge_entity_is_named_only_by_the_first_hop(qid, bridge_entity):
    question = question_rows()[qid][0]
    assert bridge_entity not in question


def test_the_pdf_report_and_the_spreadsheet_are_read_with_their_places(docs):
    page = docs["reports/harbour-board-annual-report-2023.pdf#u2"]
    assert page.location == {"page": 2} and page.title == "Harrowmouth Harbour Board: Annual Report 2023"
    row = next(s for s in docs["data/lighthouse-register.xlsx#u1"].sentences if "Dunmere Head Light" in s.text)
    assert row.location == {"sheet": "Lights", "row": 5} and row.text.endswith("Status: decommissioned 1961")


def test_the_demo_pdf_is_rebuilt_byte_for_byte(tmp_path):
    spec = importlib.util.spec_from_file_location("build_demo_documents", CORPORA / "build_demo_documents.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    builder.write_report(tmp_path / "report.pdf")
    assert (tmp_path / "report.pdf").read_bytes() == (
        DEMO / "reports" / "harbour-board-annual-report-2023.pdf"
    ).read_bytes()
