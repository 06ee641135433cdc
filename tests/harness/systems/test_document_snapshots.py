"""Format-invariance snapshots (issue 58): ``lens bench snapshot --as pdf|docx`` writes one real PDF or Word file per
article, byte-identical on every build, recorded and verified like a text snapshot; lens's reader reads them back
with the article titles; every arm names a page or paragraph run ``<file>#u<k>`` as LENS does, titles it by its
file's title, and a bench run over them scores evidence recall."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from harness.bench import renderers
from harness.bench.compare import _difference_note, _differences, compare_runs
from harness.bench.datasets import DataError, load_articles, load_questions
from harness.bench.executor import LocalExecutor
from harness.bench.renderers import pdf_fallback_fonts, render_docx, render_pdf, undrawable, writer_info
from harness.bench.run_store import read_rows
from harness.bench.runner import plan_run, run_benchmark
from harness.bench.snapshots import build_snapshots, plan_snapshots, read_manifest, verify_snapshots
from harness.bench.systems.corpus import SnapshotCorpus, file_title, read_snapshot_doc
from lens.faces._cli import main
from lens.parts import scan_corpus

from ..conftest import load_script
from .conftest import make_config, pool, records

SUFFIX = {"pdf": ".pdf", "docx": ".docx"}


def _inputs(root):
    recs = records(8)
    qfile = root / "questions.json"
    qfile.write_text(json.dumps(recs), encoding="utf-8")
    afile = root / "articles.jsonl"
    afile.write_text("".join(json.dumps(a) + "\n" for a in pool(recs, background=6)), encoding="utf-8")
    return qfile, afile


@pytest.fixture(scope="module", params=["pdf", "docx"])
def doc_snapshot(request, tmp_path_factory):
    fmt = request.param
    root = tmp_path_factory.mktemp(f"snap-{fmt}")
    qfile, afile = _inputs(root)
    snap = plan_snapshots(load_questions(qfile), load_articles(afile), (4,), seed=42, file_format=fmt)
    (result,) = build_snapshots(snap, root / "snap")
    return {
        "fmt": fmt,
        "root": root,
        "questions": qfile,
        "articles": afile,
        "out": root / "snap",
        "folder": root / "snap" / "D4",
        "manifest": read_manifest(root / "snap" / "D4.manifest.json"),
        "articles_by_title": {a.title: a for a in load_articles(afile)},
        "status": result.status,
    }


def _words(text: str) -> str:
    return " ".join(re.sub(r"\s+", " ", text).split())


def test_each_article_is_one_document_file_and_the_manifest_records_format_and_hashes(doc_snapshot):
    fmt, m, folder = doc_snapshot["fmt"], doc_snapshot["manifest"], doc_snapshot["folder"]
    names = sorted(p.name for p in folder.iterdir())
    assert names and all(n.endswith(SUFFIX[fmt]) for n in names)
    assert sorted(f["name"] for f in m["files"]) == names
    assert m["layout"]["format"] == fmt and m["parameters"]["file_format"] == fmt
    assert m["parameters"]["writer"]["library"] == ("reportlab" if fmt == "pdf" else "python-docx")
    magic = b"%PDF" if fmt == "pdf" else b"PK\x03\x04"
    assert all((folder / n).read_bytes()[:4] == magic for n in names)
    report = verify_snapshots(doc_snapshot["out"])
    assert report.ok, report.problems


def test_a_rebuild_writes_the_same_bytes_and_verify_catches_an_edit(doc_snapshot, tmp_path):
    qfile, afile = doc_snapshot["questions"], doc_snapshot["articles"]
    again = plan_snapshots(load_questions(qfile), load_articles(afile), (4,), seed=42, file_format=doc_snapshot["fmt"])
    (result,) = build_snapshots(again, doc_snapshot["out"])  # over the existing stage: checked, kept
    assert result.status == "existing"
    assert doc_snapshot["manifest"]["diagnostics"].get("articles_with_undrawable_characters", 0) == 0
    assert {f.name: f.sha256 for f in again.plans[0].files} == {
        f["name"]: f["sha256"] for f in doc_snapshot["manifest"]["files"]
    }
    # a copy edited after the build fails verification, naming the file
    copy = tmp_path / "snap"
    copy.mkdir()
    (copy / "D4.manifest.json").write_bytes((doc_snapshot["out"] / "D4.manifest.json").read_bytes())
    (copy / "D4").mkdir()
    for p in doc_snapshot["folder"].iterdir():
        (copy / "D4" / p.name).write_bytes(p.read_bytes())
    victim = sorted((copy / "D4").iterdir())[0]
    victim.write_bytes(victim.read_bytes() + b"\n% edited\n")
    report = verify_snapshots(copy)
    assert not report.ok and any(victim.name in p and "content changed" in p for p in report.problems)


def test_lens_reads_every_file_back_with_its_article_title_and_text(doc_snapshot):
    folder, m = doc_snapshot["folder"], doc_snapshot["manifest"]
    docs = scan_corpus(folder).documents
    assert docs and all(d.kind == "unit" and "#u" in d.doc_id for d in docs)
    titles = {f["name"]: f["title"] for f in m["files"]}
    for d in docs:  # the reader's title is the file's title metadata: the article's title
        assert d.title == titles[d.path], d.doc_id
        assert file_title(d.title, d.path) == titles[d.path]
    text_of: dict[str, str] = {}
    for d in docs:
        text_of[d.path] = text_of.get(d.path, "") + " " + d.text.split("\n", 1)[1]
    for name, title in titles.items():
        article = doc_snapshot["articles_by_title"][title]
        for s in article.sentences:
            assert _words(s) in _words(text_of[name]), (name, s)
    if doc_snapshot["fmt"] == "pdf":
        assert {d.location["page"] for d in docs} >= {1}
    else:
        assert all("paragraph" in d.location for d in docs)


def test_the_bench_reads_the_same_units_as_lens_named_and_titled_as_lens_names_them(doc_snapshot):
    folder, m = doc_snapshot["folder"], doc_snapshot["manifest"]
    corpus = SnapshotCorpus.load(folder)
    lens_docs = scan_corpus(folder).documents
    assert [d.name for d in corpus.docs] == [d.doc_id for d in lens_docs]
    assert corpus.checksum == m["corpus_checksum"] and not corpus.skipped
    titles = {f["name"]: f["title"] for f in m["files"]}
    assert all(d.title == titles[d.path] and d.location for d in corpus.docs)
    for title in titles.values():
        assert corpus.by_title(title) is not None
    one = corpus.docs[0]
    assert read_snapshot_doc(folder, one.name) == one
    assert read_snapshot_doc(folder, one.path + "#u999") is None


@pytest.mark.parametrize("fmt", ["pdf", "docx"])
@pytest.mark.parametrize("title", ["1999", "Untitled Goose Game"])
def test_a_title_the_reader_will_not_take_is_read_from_the_file_name(tmp_path, fmt, title):
    data = render_pdf(title, ["A sentence."]) if fmt == "pdf" else render_docx(title, ["A sentence."])
    (tmp_path / f"{title}{SUFFIX[fmt]}").write_bytes(data)
    (doc,) = scan_corpus(tmp_path).documents
    assert doc.title != title  # the reader fell back to the file name (no letter / a placeholder title)
    assert file_title(doc.title, doc.path) == title
    assert SnapshotCorpus.load(tmp_path).docs[0].title == title


def test_a_long_sentence_wraps_and_a_long_article_flows_onto_more_pages(tmp_path):
    long = "word " * 400
    data = render_pdf("Wrapped", [long.strip()] + [f"Sentence {k} of many." for k in range(80)])
    pdf = pdfium.PdfDocument(data)
    assert len(pdf) >= 2
    first = pdf[0].get_textpage().get_text_range()
    width = pdf[0].get_width()
    pdf.close()
    assert first.count("word") > 100 and max(len(x) for x in first.splitlines()) < 200 and width < 700


def test_shards_are_for_text_snapshots_only(tmp_path):
    qfile, afile = _inputs(tmp_path)
    snap = plan_snapshots(load_questions(qfile), load_articles(afile), (4,), seed=42, file_format="pdf")
    with pytest.raises(DataError, match="--shards writes the articles as text shards"):
        build_snapshots(snap, tmp_path / "snap", shards=True)


def test_the_cli_writes_a_pdf_snapshot_and_verifies_it(tmp_path, capsys):
    qfile, afile = _inputs(tmp_path)
    out = tmp_path / "snap"
    cmd = ["bench", "snapshot", "--questions", str(qfile), "--articles", str(afile), "--sizes", "4"]
    assert main(cmd + ["--out", str(out), "--as", "pdf", "--verify"]) == 0
    assert "verify: OK" in capsys.readouterr().out
    assert all(p.suffix == ".pdf" for p in (out / "D4").iterdir())
    assert main(["bench", "snapshot", "--out", str(out), "--verify"]) == 0


def test_a_bench_run_over_the_documents_scores_evidence_recall(doc_snapshot, endpoint, tmp_path):
    plan = plan_run(
        snapshot=doc_snapshot["folder"],
        questions_file=doc_snapshot["questions"],
        systems=("lens", "bm25"),
        out=tmp_path / "run",
        config=make_config(),
        limit=2,
    )
    summary = run_benchmark(plan, executor=LocalExecutor(1), progress=False)
    assert summary.complete and summary.rows_written == 4
    rows = read_rows(tmp_path / "run")
    titles = {f["title"] for f in doc_snapshot["manifest"]["files"]}
    for r in rows:
        assert r["scores"]["ev_rec"] is not None
        assert r["prediction"]["retrieved"], r["system"]
        for d in r["prediction"]["retrieved"]:
            assert "#u" in d["path"] and d["title"] in titles and d["location"]
    bm25 = [r for r in rows if r["system"] == "bm25"]
    assert all(r["scores"]["ev_rec"] > 0 for r in bm25)  # the question names the river: its article is found
    lens = [r for r in rows if r["system"] == "lens"]
    assert any(r["scores"]["ev_rec"] > 0 for r in lens)
    assert all(r["scores"]["sp_f1"] is None for r in lens)  # a unit's sentences are not HotpotQA sent_ids


def test_compare_pairs_the_text_run_with_the_document_run_and_refuses_another_configuration(
    doc_snapshot, endpoint, tmp_path, capsys
):
    qfile, afile = doc_snapshot["questions"], doc_snapshot["articles"]
    build_snapshots(plan_snapshots(load_questions(qfile), load_articles(afile), (4,), seed=42), tmp_path / "text")
    arms = {
        "a": (tmp_path / "text" / "D4", make_config()),
        "b": (doc_snapshot["folder"], make_config()),
        "c": (doc_snapshot["folder"], make_config(**{"budget.max_rounds": 1})),
    }
    for name, (folder, config) in arms.items():
        p = plan_run(
            snapshot=folder, questions_file=qfile, systems=("lens", "bm25"), out=tmp_path / name, config=config, limit=2
        )
        run_benchmark(p, executor=LocalExecutor(1), progress=False)
    cmd = ["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp")]
    assert main(cmd + ["--resamples", "50"]) == 0
    assert "The same questions over A = D4 (text," in capsys.readouterr().out
    with open(tmp_path / "cmp" / "compare.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["System"] for r in rows] == ["LENS", "BM25-RAG"] and all(r["n"] == "2" for r in rows)
    assert all(r["Ev.Rec A"] != "—" and r["Ev.Rec B"] != "—" for r in rows)
    with pytest.raises(DataError, match=r"the configuration differs \(budget.max_rounds\)"):
        compare_runs(tmp_path / "a", tmp_path / "c")
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert "- LENS: answers differ on " in md and "### Where the answers differ" in md
    with open(tmp_path / "cmp" / "differences.csv", encoding="utf-8") as fh:
        assert next(csv.reader(fh)) == [
            "System",
            "Question",
            "Gold",
            "Answer A",
            "Answer B",
            "EM A",
            "EM B",
            "Evidence",
        ]


def _row(answer: str, em: bool, texts: list[str]) -> dict:
    return {
        "gold_answer": "Skerrow Light",
        "prediction": {"answer": answer, "evidence": [{"text": t} for t in texts]},
        "scores": {"em": em},
    }


def test_a_differing_answer_is_told_apart_by_whether_its_evidence_was_the_same_text():
    a = {
        "q1": _row("Skerrow Light", True, ["It stands on Skerrow."]),
        "q2": _row("Quill Point", False, ["It stands on Skerrow."]),
        "q3": _row("the Skerrow Light", True, ["It stands on Skerrow."]),
    }
    b = {
        "q1": _row("Quill Point", False, ["It stands on Skerrow."]),  # same text, other answer: the prompt's labels
        "q2": _row("Skerrow Light", True, ["Skerrow Light stands on Skerrow.", "It was lit in 1874."]),
        "q3": _row("Skerrow Light", True, ["Other text."]),  # the same answer once normalised: not a difference
    }
    diffs = _differences("lens", a, b, ["q1", "q2", "q3"])
    assert [(d[1], d[3], d[4], d[5], d[6], d[7]) for d in diffs] == [
        ("q1", "Skerrow Light", "Quill Point", "1", "0", "same"),
        ("q2", "Quill Point", "Skerrow Light", "0", "1", "differs"),
    ]
    assert _difference_note("lens", diffs, 3) == (
        "LENS: answers differ on 2 of 3 questions — 1 with the same evidence text (B right only 0, A right only 1); "
        "1 with other evidence (B right only 1, A right only 0)"
    )


FALLBACK_PACKAGES = "fonts-noto-core fonts-droid-fallback fonts-nanum"


@pytest.fixture
def fallback_fonts():
    names = {Path(p).name for p, _ in pdf_fallback_fonts()}
    assert {"NotoSansBengali-Regular.ttf", "DroidSansFallbackFull.ttf", "NanumGothic.ttf"} <= names, (
        f"the PDF snapshot's fallback fonts are missing: apt-get install {FALLBACK_PACKAGES} (.ci/run does)"
    )


def test_characters_no_pdf_font_can_draw_are_counted(tmp_path, fallback_fonts):
    assert undrawable("Zürich 東京 서울 ঈনাসুল \uf8ff") == {"\uf8ff"}  # a private-use character: no font has it
    recs = records(8)
    recs[0]["context"][0][1][0] += " (\uf8ff 東京)"
    (tmp_path / "q.json").write_text(json.dumps(recs), encoding="utf-8")
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(a) + "\n" for a in pool(recs, background=6)), encoding="utf-8")
    snap = plan_snapshots(
        load_questions(tmp_path / "q.json"), load_articles(tmp_path / "a.jsonl"), (8,), seed=42, file_format="pdf"
    )
    assert snap.diagnostics["articles_with_undrawable_characters"] == 1
    assert snap.diagnostics["undrawable_characters"] == 1


@pytest.mark.parametrize(
    "sentence",
    [
        "Eenasul Fateh (Bengali: ঈনাসুল ফাতেহ; born 3 April 1959) is a Bangladeshi diplomat.",
        'Raaz Pichhle Janm Ka (Hindi: राज़ पिछले जनम का , "Past Life Secrets") is a series.',
        "Tokyo (東京都, Tōkyō-to) and Seoul (서울) and ひらがな.",
    ],
)
def test_a_character_dejavu_sans_lacks_is_drawn_in_a_fallback_font_and_comes_back(tmp_path, fallback_fonts, sentence):
    (tmp_path / "Article.pdf").write_bytes(render_pdf("Article", [sentence]))
    (doc,) = scan_corpus(tmp_path).documents
    assert " ".join(sentence.split()) in " ".join(doc.text.split())


def test_an_article_dejavu_sans_draws_whole_is_written_as_without_the_fallbacks(monkeypatch, fallback_fonts):
    sentences = ["Zürich, Ελλάδα and Москва — all drawn by DejaVu Sans.", "A second sentence."]
    with_fallbacks = render_pdf("Zürich", sentences)
    assert pdf_fallback_fonts() and "<font" not in renderers._markup(sentences[0])
    monkeypatch.setattr(renderers, "_FALLBACK_FONTS", ())
    _forget_fonts()
    try:
        assert pdf_fallback_fonts() == () and undrawable("東京") == {"東", "京"}
        assert render_pdf("Zürich", sentences) == with_fallbacks
    finally:  # the fonts found again for the tests after this one
        monkeypatch.undo()
        _forget_fonts()


def _forget_fonts() -> None:
    for cached in (renderers.pdf_fallback_fonts, renderers._fallbacks, renderers._font_of):
        cached.cache_clear()


def test_the_manifest_records_the_fallback_fonts(fallback_fonts):
    info = writer_info("pdf")
    assert info["fallback_fonts"] == len(pdf_fallback_fonts()) > 100
    assert re.fullmatch("[0-9a-f]{64}", info["fallback_fonts_sha256"])


def test_the_fidelity_check_counts_articles_that_come_back_verbatim_and_says_why_not(tmp_path, fallback_fonts):
    recs = records(8)
    recs[0]["context"][0][1][0] += " (Bengali: ঈনাসুল ফাতেহ)"  # a fallback font draws it: it comes back
    recs[1]["context"][0][1][0] += " (Hebrew: ממשלת ישראל)"  # logical order drawn, extracted reversed
    recs[2]["context"][0][1][0] += " (\uf8ff)"  # no font has it
    (tmp_path / "q.json").write_text(json.dumps(recs), encoding="utf-8")
    afile = tmp_path / "a.jsonl"
    afile.write_text("".join(json.dumps(a) + "\n" for a in pool(recs, background=2)), encoding="utf-8")
    snap = plan_snapshots(load_questions(tmp_path / "q.json"), load_articles(afile), (8,), seed=42, file_format="pdf")
    build_snapshots(snap, tmp_path / "snap")
    out = load_script("snapshot_fidelity").fidelity(tmp_path / "snap" / "D8", afile)
    river = {a.title: name for name, a in snap.articles.items()}
    assert out["format"] == "pdf" and out["files"] == len(snap.articles)
    assert out["not_verbatim_right_to_left"] == 1 and out["not_verbatim_other"] == 1
    assert out["other_examples"] == [river["Varn02 River"]]
    assert out["verbatim"] == out["files"] - 2 and out["undrawable"]["articles_with_undrawable_characters"] == 1


def test_the_fidelity_check_says_in_one_line_what_it_cannot_read(tmp_path, capsys):
    script = load_script("snapshot_fidelity")
    assert script.main([str(tmp_path / "D8"), "--articles", str(tmp_path / "a.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("snapshot_fidelity: ") and "D8.manifest.json: not a snapshot manifest" in err
    assert "\n" not in err
