"""Unit tests for lens/prior/_prior.py: the corpus view's lookups (word-start term counts with suffix folding, maximal
title n-grams, title keys) and the no-LLM prior over it (title, BM25 lexical, accent folding, memory, limit,
the lexical-only ablation), plus a regression test that pins the prior's ranking on a small fixed corpus.

Every corpus is a folder of real files written with ``tmp_path`` and read by ``scan_corpus``, one article per
file with its title on the first line, so the tests exercise the path users run.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from lens._config import PriorSettings
from lens._terms import title_key
from lens.parts import CorpusView, Prior
from lens.reader._corpus import scan_corpus


def _slug(title: str) -> str:
    """A file name whose stem reads as the title does (so the file-name key adds no second name)."""
    return re.sub(r"[^0-9a-z]+", "-", title_key(title)).strip("-") + ".txt"


def make_view(root: Path, articles: list[tuple[str, str]]) -> CorpusView:
    root.mkdir(parents=True, exist_ok=True)
    for title, body in articles:
        (root / _slug(title)).write_text(f"{title}\n{body}\n", encoding="utf-8")
    return CorpusView(scan_corpus(root))


def titles_of(view: CorpusView, ranked) -> list[str]:
    return [view.docs[c.index].title for c in ranked]


def index_of(view: CorpusView, title: str) -> int:
    (i,) = [i for i, d in enumerate(view.docs) if d.title == title]
    return i


SMALL = [
    ("Marrow Bay", "Marrow Bay is a cove on the north coast. Fishing boats shelter there in winter."),
    ("Bass", "Bass is a fish found in rivers and lakes."),
    ("Electoral district of Bass", "The Electoral district of Bass is a seat in Tasmania. It was created in 1909."),
    ("Ana Gutiérrez", "Ana Gutiérrez is a painter born in Seville in 1950."),
    ("Keeper's Lighthouse", "The lighthouse stands on a rocky headland. Its lamps were lit in 1871."),
    ("Quarry Road", "Quarry Road runs past the old mill. The mill boxes were stacked by the road."),
]


@pytest.fixture
def small(tmp_path) -> CorpusView:
    return make_view(tmp_path / "small", SMALL)


# ---------------------------------------------------------------- CorpusView


def test_view_reads_one_document_per_file_titled_by_its_first_line(small):
    assert len(small) == 6
    assert sorted(d.title for d in small.docs) == sorted(t for t, _ in SMALL)
    assert small.lengths.shape == (6,)
    assert small.avg_len == pytest.approx(float(np.mean([len(d.text) for d in small.docs])))


def test_title_keys_are_folded_lowercase_words_of_each_title(small):
    keys = dict(zip((d.title for d in small.docs), small.title_keys))
    assert keys == {
        "Marrow Bay": "marrow bay",
        "Bass": "bass",
        "Electoral district of Bass": "electoral district of bass",
        "Ana Gutiérrez": "ana gutierrez",  # accent folded
        "Keeper's Lighthouse": "keeper lighthouse",  # possessive dropped
        "Quarry Road": "quarry road",
    }
    assert small.titles["ana gutierrez"] == [index_of(small, "Ana Gutiérrez")]


def test_title_table_holds_the_title_without_its_disambiguation_and_the_file_stem(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    (root / "home-film.txt").write_text("Home (film)\nHome is a film of 2009.\n", encoding="utf-8")
    (root / "notes.md").write_text("Harbour Log\nThe boats came in.\n", encoding="utf-8")
    view = CorpusView(scan_corpus(root))
    film, log = index_of(view, "Home (film)"), index_of(view, "Harbour Log")
    assert view.titles["home film"] == [film]
    assert view.titles["home"] == [film]  # base title without "(film)"
    assert view.titles["harbour log"] == [log]
    assert view.titles["notes"] == [log]  # file stem, extension removed
    assert view.title_keys[film] == "home film"


def test_term_counts_match_at_word_starts_only(small):
    counts = small.term_counts(["light", "lighthouse", "ass"])
    keeper = index_of(small, "Keeper's Lighthouse")
    # "light" is a word start of "lighthouse" but "house" is no foldable suffix: no match
    assert counts[:, 0].sum() == 0
    assert counts[keeper, 1] == 2  # the title line and "The lighthouse stands"
    assert counts[:, 1].sum() == 2
    # "ass" inside "bass" is not at a word start
    assert counts[:, 2].sum() == 0


def test_term_counts_fold_simple_suffixes(small):
    terms = ["lamp", "boat", "fish", "box", "keeper", "shelter"]
    counts = small.term_counts(terms)
    col = {t: j for j, t in enumerate(terms)}
    keeper, bay, bass, road = (index_of(small, t) for t in ("Keeper's Lighthouse", "Marrow Bay", "Bass", "Quarry Road"))
    assert counts[keeper, col["lamp"]] == 1  # lamps (-s)
    assert counts[bay, col["boat"]] == 1  # boats
    assert counts[bay, col["fish"]] == 1  # Fishing (-ing)
    assert counts[bass, col["fish"]] == 1  # fish
    assert counts[road, col["box"]] == 1  # boxes (-es)
    assert counts[keeper, col["keeper"]] == 1  # Keeper's ('s)
    assert counts[bay, col["shelter"]] == 1
    assert counts.sum() == 7


def test_term_counts_are_case_and_accent_insensitive(small):
    counts = small.term_counts(["gutierrez", "seville"])
    ana = index_of(small, "Ana Gutiérrez")
    assert counts[ana].tolist() == [2.0, 1.0]
    assert counts.sum() == 3


def test_term_counts_shape_with_no_terms_or_no_documents(small, tmp_path):
    assert small.term_counts([]).shape == (6, 0)
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    empty = CorpusView(scan_corpus(empty_dir))
    assert len(empty) == 0
    assert empty.term_counts(["bass"]).shape == (0, 1)


def test_term_hits_are_the_rows_of_the_term_counts_that_are_not_zero(small):
    terms = ["bass", "gutierrez", "heron", "quill"]
    counts = small.term_counts(terms)
    rows, hits = small.term_hits(terms)
    assert rows.tolist() == np.flatnonzero(counts.any(axis=1)).tolist() and len(rows) >= 2
    assert hits.tolist() == counts[rows].tolist()
    none, empty = small.term_hits(["heron"])
    assert none.tolist() == [] and empty.shape == (0, 1)


def test_titles_in_keeps_only_maximal_title_matches(small):
    electoral, bass = index_of(small, "Electoral district of Bass"), index_of(small, "Bass")
    assert small.titles_in("Who holds the Electoral district of Bass now?") == {electoral: 4}
    assert small.titles_in("Where do bass live?") == {bass: 1}
    # both names written separately: both match, each with its own length
    found = small.titles_in("bass near marrow bay")
    assert found == {bass: 1, index_of(small, "Marrow Bay"): 2}


def test_titles_in_is_linear_in_the_number_of_title_matches(tmp_path):
    view = make_view(tmp_path / "f", [("Harbour", "A harbour."), ("Keeper", "A keeper.")])
    text = "harbour keeper " * 8000  # 16,000 title matches: a pairwise maximality check is 10^8 comparisons
    t0 = time.perf_counter()
    found = view.titles_in(text)
    assert time.perf_counter() - t0 < 2.0
    assert found == {index_of(view, "Harbour"): 1, index_of(view, "Keeper"): 1}


def test_titles_in_past_its_deadline_stops_looking(small):
    assert small.titles_in("bass near marrow bay", deadline=time.monotonic() - 1) == {}


def test_the_prior_past_the_question_deadline_ranks_without_title_or_link_signals(small):
    question = "Where is the Electoral district of Bass?"
    on_time = Prior(small, PriorSettings()).score(question)
    late = Prior(small, PriorSettings(), deadline=time.monotonic() - 1).score(question)
    assert any("title" in c.signals for c in on_time)
    assert late and not any({"title", "hop"} & set(c.signals) for c in late)


def test_titles_in_folds_accents_and_case(small):
    assert small.titles_in("a portrait by ANA GUTIERREZ") == {index_of(small, "Ana Gutiérrez"): 2}
    assert small.titles_in("nothing here matches") == {}


# ---------------------------------------------------------------- Prior.score


def test_document_whose_title_is_in_the_question_ranks_first(small):
    ranked = Prior(small, PriorSettings()).score("When was Marrow Bay first charted?")
    assert titles_of(small, ranked)[0] == "Marrow Bay"
    top = ranked[0]
    assert top.signals["title"] == pytest.approx(PriorSettings().title_weight)  # full two-word title match
    assert all(top.score > c.score for c in ranked[1:])


def test_longer_title_beats_the_title_it_contains(small):
    ranked = Prior(small, PriorSettings()).score("When was the Electoral district of Bass created?")
    titles = titles_of(small, ranked)
    assert titles[0] == "Electoral district of Bass"
    assert titles.index("Electoral district of Bass") < titles.index("Bass")
    assert ranked[0].signals["title"] == pytest.approx(3.0)


def test_bm25_lexical_hits_rank_a_document_without_a_title_match(small):
    ranked = Prior(small, PriorSettings()).score("When were the lamps lit on the headland?")
    assert titles_of(small, ranked) == ["Keeper's Lighthouse"]  # no other document holds a query term
    assert ranked[0].signals == {"lexical": pytest.approx(1.0)}  # normalised to the best lexical score


def test_lexical_score_is_normalised_bm25_with_rarer_terms_weighing_more(tmp_path):
    view = make_view(
        tmp_path / "c",
        [
            ("Alpha", "The heron and the crane."),
            ("Beta", "The heron."),
            ("Gamma", "The heron again."),
            ("Delta", "Nothing of note."),
        ],
    )
    ranked = Prior(view, PriorSettings(), lexical_only=True).score("crane heron")
    assert titles_of(view, ranked) == ["Alpha", "Beta", "Gamma"]  # "crane" is rare, only Alpha has it
    assert ranked[0].score == pytest.approx(1.0)
    # BM25 (k1 0.9, b 0.4) by hand for "heron" in Beta relative to Alpha's two-term score
    n, k1, b = 4, 0.9, 0.4
    lengths = np.array([len(d.text) for d in view.docs], dtype=float)
    avg = lengths.mean()

    def idf(df):
        return np.log(1 + (n - df + 0.5) / (df + 0.5))

    def tf(i):
        return (k1 + 1) / (1 + k1 * (1 - b + b * lengths[i] / avg))

    a, be = index_of(view, "Alpha"), index_of(view, "Beta")
    alpha = tf(a) * (idf(1) + idf(3))
    beta = tf(be) * idf(3)
    assert ranked[1].score == pytest.approx(beta / alpha)


def test_accented_document_is_found_from_an_unaccented_question(small):
    prior = Prior(small, PriorSettings())
    ranked = prior.score("Where was gutierrez born?")
    assert titles_of(small, ranked) == ["Ana Gutiérrez"]
    # "gutierrez" alone is no title key here; it is one of the two terms (gutierrez, born) in the title line
    assert ranked[0].signals == {"lexical": pytest.approx(1.0), "layout": pytest.approx(0.5 * 1 / 2)}
    named = prior.score("Where was Ana Gutierrez born?")
    assert titles_of(small, named)[0] == "Ana Gutiérrez"
    assert named[0].signals["title"] == pytest.approx(3.0)  # the full folded title matches


def test_accented_question_finds_an_unaccented_document(tmp_path):
    view = make_view(tmp_path / "c", [("Jose Nunez", "Jose Nunez was a sailor."), ("Other", "A sailor's song.")])
    ranked = Prior(view, PriorSettings()).score("Who was José Núñez?")
    assert titles_of(view, ranked)[0] == "Jose Nunez"
    assert ranked[0].signals["title"] == pytest.approx(3.0)


def test_cues_add_terms_the_question_lacks(small):
    prior = Prior(small, PriorSettings())
    assert prior.score("What about zebras?") == []  # nothing matches: no candidate at all
    ranked = prior.score("What about zebras?", ["rocky headland"])
    assert titles_of(small, ranked) == ["Keeper's Lighthouse"]


def test_memory_signal_lifts_a_document(small):
    prior = Prior(small, PriorSettings())
    q = "What was stacked by the road near the mill?"
    plain = prior.score(q)
    assert titles_of(small, plain)[0] == "Quarry Road"
    bay = index_of(small, "Marrow Bay")
    assert bay not in [c.index for c in plain]  # no signal at all for it without memory
    lifted = prior.score(q, memory={bay: 0.9})
    assert titles_of(small, lifted)[0] == "Marrow Bay"
    assert lifted[0].signals == {"memory": pytest.approx(PriorSettings().memory_weight * 0.9)}


def test_memory_signal_is_scaled_by_memory_weight(small):
    bay = index_of(small, "Marrow Bay")
    ranked = Prior(small, PriorSettings(memory_weight=0.5)).score("mill", memory={bay: 1.0})
    by_title = {small.docs[c.index].title: c for c in ranked}
    assert by_title["Marrow Bay"].score == pytest.approx(0.5)


def test_limit_caps_the_candidates_and_defaults_to_settings(tmp_path):
    view = make_view(tmp_path / "c", [(f"Station {w}", f"Station {w} has a platform.") for w in "abcdefgh"])
    assert len(view) == 8
    prior = Prior(view, PriorSettings(candidates=5))
    assert len(prior.score("platform")) == 5
    assert len(prior.score("platform", limit=3)) == 3
    assert len(prior.score("platform", limit=50)) == 8
    scores = [c.score for c in prior.score("platform", limit=8)]
    assert scores == sorted(scores, reverse=True)


def test_equal_scores_keep_folder_order(tmp_path):
    view = make_view(tmp_path / "c", [(f"Plain {w}", "A quiet hamlet.") for w in "cab"])
    ranked = Prior(view, PriorSettings(), lexical_only=True).score("hamlet")
    assert [c.index for c in ranked] == [0, 1, 2]
    assert len({c.score for c in ranked}) == 1


def test_lexical_only_ablation_ignores_titles(small):
    q = "When was the Electoral district of Bass created?"
    full = Prior(small, PriorSettings()).score(q)
    lex = Prior(small, PriorSettings(), lexical_only=True).score(q)
    assert all(set(c.signals) == {"lexical"} for c in lex)
    assert any("title" in c.signals for c in full)
    # without titles the score is the normalised BM25 alone
    assert lex[0].score == pytest.approx(1.0)
    bay = index_of(small, "Marrow Bay")
    assert bay not in [c.index for c in Prior(small, lexical_only=True).score("mill", memory={bay: 1.0})]


def test_title_without_any_lexical_hit_is_still_a_candidate_through_the_title(small):
    # the question names the lighthouse only through its possessive title form
    ranked = Prior(small, PriorSettings()).score("Who kept Keeper's Lighthouse?")
    assert titles_of(small, ranked)[0] == "Keeper's Lighthouse"
    assert ranked[0].signals["title"] == pytest.approx(3.0)


def test_link_hop_reaches_a_document_named_in_the_best_document(tmp_path):
    view = make_view(
        tmp_path / "c",
        [
            ("Marrow Bay", "Marrow Bay is a cove. Its harbour wall was built by Tobias Renn."),
            ("Tobias Renn", "Tobias Renn was an engineer born in Calder."),
            ("Calder", "Calder is a market town."),
        ],
    )
    ranked = Prior(view, PriorSettings()).score("Where was the builder of the Marrow Bay wall born?")
    assert titles_of(view, ranked)[:2] == ["Marrow Bay", "Tobias Renn"]
    renn = ranked[1]
    assert renn.signals["hop"] > 0
    no_hop = Prior(view, PriorSettings(link_hop=False)).score("Where was the builder of the Marrow Bay wall born?")
    assert all("hop" not in c.signals for c in no_hop)


def test_empty_folder_view_scores_nothing(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    view = CorpusView(scan_corpus(root))
    assert len(view) == 0
    assert view.title_keys == []
    assert view.titles_in("Marrow Bay") == {}
    assert Prior(view, PriorSettings()).score("Where is Marrow Bay?", ["Marrow Bay"], memory={0: 1.0}) == []


def test_scores_carry_per_signal_contributions_that_sum_to_the_score(small):
    ranked = Prior(small, PriorSettings()).score("When was the Electoral district of Bass created?", ["seat"])
    assert ranked
    for c in ranked:
        assert c.score > 0
        assert sum(c.signals.values()) == pytest.approx(c.score)
        assert all(v != 0 for v in c.signals.values())


# ---------------------------------------------------------------- regression: pinned ranking

# A fixed fictional corpus and questions with known gold titles. The numbers asserted below pin the prior's
# behaviour on this fixture today (as Pyserini pins expected scores): they must only change deliberately, with a
# note on why a ranking moved.
FIXTURE = [
    (
        "Marrow Bay",
        "Marrow Bay is a cove on the north coast of Vellmark. Fishing boats shelter there in winter. The harbour wall was built by Tobias Renn.",
    ),
    (
        "Tobias Renn",
        "Tobias Renn was an engineer born in Calder in 1802. He designed harbour walls and the Calder Viaduct.",
    ),
    ("Calder", "Calder is a market town on the River Orme. It has a cathedral and a wool exchange."),
    (
        "Calder Viaduct",
        "The Calder Viaduct is a railway bridge of nineteen arches. It opened in 1841 and carries the Orme Valley line.",
    ),
    (
        "River Orme",
        "The River Orme rises in the Grey Fells and flows east for 112 kilometres to the sea at Marrow Bay.",
    ),
    ("Grey Fells", "The Grey Fells are a range of hills in Vellmark. Their highest summit is Harl Pike at 903 metres."),
    (
        "Harl Pike",
        "Harl Pike is a mountain of the Grey Fells. It was first climbed in 1788 by the surveyor Ines Gutiérrez.",
    ),
    (
        "Ines Gutiérrez",
        "Ines Gutiérrez was a surveyor and cartographer born in Seville in 1761. She mapped the Grey Fells for the Crown.",
    ),
    (
        "Vellmark",
        "Vellmark is a northern province with a rugged coast. Its capital is Oster and its emblem is a silver heron.",
    ),
    ("Oster", "Oster is the capital of Vellmark. The Oster Conservatory was founded there in 1870 by Mira Dahl."),
    (
        "Oster Conservatory",
        "The Oster Conservatory is a music school in Oster. It was founded in 1870 and trains organists and singers.",
    ),
    ("Mira Dahl", "Mira Dahl was a composer and organist born in 1834. She wrote the oratorio The Silver Heron."),
    ("The Silver Heron", "The Silver Heron is an oratorio by Mira Dahl first performed in 1881 in Oster Cathedral."),
    (
        "Oster Cathedral",
        "Oster Cathedral is a Gothic church in Oster. Its spire is 96 metres tall and its organ was built in 1862.",
    ),
    ("Kettle Island", "Kettle Island lies off the coast of Vellmark. A lighthouse on the island was lit in 1871."),
    (
        "Kettle Island Lighthouse",
        "The Kettle Island Lighthouse is a tower 31 metres tall. Its keepers left in 1978 when the lamp was automated.",
    ),
    ("Bass", "Bass is a fish found in rivers and lakes. Anglers catch bass in summer."),
    (
        "Electoral district of Bass",
        "The Electoral district of Bass is a seat of the Vellmark assembly. It was created in 1909 and covers the east coast.",
    ),
    ("Bass Strait Ferry", "The Bass Strait Ferry crossed between Oster and Kettle Island from 1899 to 1961."),
    (
        "Hollin Abbey",
        "Hollin Abbey is a ruined monastery near Calder. Monks founded it in 1132 and farmed sheep for wool.",
    ),
    (
        "Wool exchange of Calder",
        "The wool exchange of Calder was a trading hall opened in 1795. Merchants from Oster bought fleeces there.",
    ),
    (
        "Sten Aalto",
        "Sten Aalto was a painter born in Oster in 1850. He painted the coast of Marrow Bay and the Grey Fells.",
    ),
    (
        "Painters of the north coast",
        "The painters of the north coast were a circle of artists around Sten Aalto. They worked outdoors in all weathers.",
    ),
    (
        "Orme Valley line",
        "The Orme Valley line is a railway from Calder to Oster. It crosses the Calder Viaduct and was electrified in 1962.",
    ),
    ("Heron (emblem)", "The heron emblem of Vellmark shows a silver heron on a blue field. It was adopted in 1911."),
    ("Heron", "Herons are long-legged wading birds. They hunt fish in shallow water."),
    (
        "Dahl Prize",
        "The Dahl Prize is an award for young organists given by the Oster Conservatory every two years since 1950.",
    ),
    ("Ferris Quay", "Ferris Quay is a wharf in Oster harbour. Ferries to Kettle Island leave from the quay."),
    ("Wenna Holt", "Wenna Holt was a novelist born in Calder in 1891. Her novel Low Tide is set at Marrow Bay."),
    (
        "Low Tide",
        "Low Tide is a novel by Wenna Holt published in 1932. It follows a fishing family through one winter.",
    ),
]

# question, gold titles, pinned top-3 titles, pinned top-1 score (3 decimals)
PINNED = [
    (
        "Who built the harbour wall of Marrow Bay, and where was he born?",
        ("Marrow Bay", "Tobias Renn"),
        ["Marrow Bay", "Tobias Renn", "Wenna Holt"],
        4.167,
    ),
    (
        "Which is longer, the Calder Viaduct or the Orme Valley line?",
        ("Calder Viaduct", "Orme Valley line"),
        ["Calder Viaduct", "Orme Valley line", "Calder"],
        5.557,
    ),
    (
        "Who first climbed the highest summit of the Grey Fells?",
        ("Grey Fells", "Harl Pike"),
        ["Grey Fells", "Harl Pike", "Ines Gutiérrez"],
        4.92,
    ),
    (
        "When was the oratorio by the founder of the Oster Conservatory first performed?",
        ("Oster Conservatory", "The Silver Heron"),
        ["Oster Conservatory", "Oster", "The Silver Heron"],
        3.842,
    ),
    (
        "In which year was gutierrez the surveyor born?",
        ("Ines Gutiérrez", "Harl Pike"),
        ["Ines Gutiérrez", "Harl Pike", "Dahl Prize"],
        1.8,
    ),
    (
        "When was the Electoral district of Bass created?",
        ("Electoral district of Bass", "Vellmark"),
        ["Electoral district of Bass", "Bass", "Bass Strait Ferry"],
        4.375,
    ),
    (
        "When was the lamp automated at the lighthouse lit in 1871?",
        ("Kettle Island", "Kettle Island Lighthouse"),
        ["Kettle Island Lighthouse", "Kettle Island"],
        1.1,
    ),
    (
        "Which novel set in a fishing cove was written by an author born in Calder?",
        ("Low Tide", "Wenna Holt"),
        ["Calder", "Wenna Holt", "Marrow Bay"],
        2.79,
    ),
]
PINNED_RECALL_AT_2 = 0.8125  # 13 of 16 gold titles in the top 2
PINNED_RECALL_AT_4 = 0.9375  # 15 of 16 in the top 4 ("Vellmark" is never reached for the Bass question)
# The lexical-only ablation on the same fixture. Today it recalls *more* at 2 than the full prior (0.875 vs
# 0.8125): the single-word title "Calder" and the title "Oster" pull in documents that only name the place.
PINNED_LEXICAL_RECALL_AT_2 = 0.875
PINNED_LEXICAL_RECALL_AT_4 = 0.9375


@pytest.fixture(scope="module")
def fixture_view(tmp_path_factory) -> CorpusView:
    return make_view(tmp_path_factory.mktemp("pinned"), FIXTURE)


def _recall(ranked_titles: list[str], gold: tuple[str, ...], k: int) -> float:
    return sum(g in ranked_titles[:k] for g in gold) / len(gold)


def test_pinned_fixture_is_read_as_thirty_documents(fixture_view):
    assert len(fixture_view) == 30
    assert {d.title for d in fixture_view.docs} == {t for t, _ in FIXTURE}


@pytest.mark.parametrize("question, gold, top3, top_score", PINNED, ids=[f"q{i}" for i in range(len(PINNED))])
def test_pinned_top3_titles_per_question(fixture_view, question, gold, top3, top_score):
    ranked = Prior(fixture_view, PriorSettings()).score(question, limit=4)
    assert titles_of(fixture_view, ranked)[:3] == top3
    assert ranked[0].score == pytest.approx(top_score, abs=5e-4)


def test_pinned_recall_at_2_and_4(fixture_view):
    prior = Prior(fixture_view, PriorSettings())
    r2 = r4 = 0.0
    for question, gold, _, _ in PINNED:
        titles = titles_of(fixture_view, prior.score(question, limit=4))
        r2 += _recall(titles, gold, 2)
        r4 += _recall(titles, gold, 4)
    assert r2 / len(PINNED) == pytest.approx(PINNED_RECALL_AT_2)
    assert r4 / len(PINNED) == pytest.approx(PINNED_RECALL_AT_4)


def test_pinned_lexical_only_ablation_recall(fixture_view):
    prior = Prior(fixture_view, PriorSettings(), lexical_only=True)
    r2 = r4 = 0.0
    for question, gold, _, _ in PINNED:
        titles = titles_of(fixture_view, prior.score(question, limit=4))
        r2 += _recall(titles, gold, 2)
        r4 += _recall(titles, gold, 4)
    assert r2 / len(PINNED) == pytest.approx(PINNED_LEXICAL_RECALL_AT_2)
    assert r4 / len(PINNED) == pytest.approx(PINNED_LEXICAL_RECALL_AT_4)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "suspected bug: titles_in drops 'Bass' inside 'Electoral district of Bass' (maximal match), but "
        "Prior._name_cues takes the capitalised span 'Bass' (capitalised_spans breaks at lowercase 'district') "
        "and _fuzzy_titles matches it to the title 'bass' at ratio 100, so 'Bass' still gets a title signal of "
        "0.8 * title_weight = 2.4, undoing the maximal-match rule"
    ),
)
def test_title_contained_in_a_longer_matched_title_gets_no_title_signal(small):
    ranked = Prior(small, PriorSettings()).score("When was the Electoral district of Bass created?")
    bass = next(c for c in ranked if small.docs[c.index].title == "Bass")
    assert "title" not in bass.signals


# ---------------------------------------------------------------- the per-process view memo (CorpusView.of)


def _state(view: CorpusView, terms: list[str]) -> tuple:
    """Everything the prior reads from a view, for comparing a memoised view with one built from scratch."""
    return (
        [d.doc_id for d in view.docs],
        [d.sha256 for d in view.docs],
        view.term_counts(terms).tolist(),
        view.lengths.tolist(),
        view.avg_len,
        sorted((k, tuple(v)) for k, v in view.titles.items()),
    )


def test_an_unchanged_folder_gets_its_view_back_and_any_change_rebuilds_it(tmp_path, monkeypatch):
    import time

    from lens.reader import _filestats
    from lens.reader._filestats import survey_corpus

    monkeypatch.setattr(_filestats, "_RACY_NS", 0)  # settle even files written a moment ago
    (tmp_path / "a.txt").write_text("Quill Point\nQuill Point is a cape in the north.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Harbor Town\nHarbor Town lies south of Quill Point.\n", encoding="utf-8")
    terms = ["quill", "cape", "harbor", "lighthouse"]
    first = CorpusView.of(survey_corpus(tmp_path))
    first.titles  # built lazily once, kept with the view
    scan = survey_corpus(tmp_path)
    again = CorpusView.of(scan)
    assert again is first and again.scan is scan  # nothing changed: the same lookups, the newest scan's counts

    time.sleep(0.02)
    (tmp_path / "a.txt").write_text("Quill Point\nQuill Point has a lighthouse.\n", encoding="utf-8")
    changed = CorpusView.of(survey_corpus(tmp_path))
    assert changed is not first
    assert _state(changed, terms) == _state(CorpusView(scan_corpus(tmp_path)), terms)
    assert changed.term_counts(["lighthouse"])[:, 0].tolist() == [1.0, 0.0]

    (tmp_path / "c.txt").write_text("Lighthouse\nA lighthouse is a tower.\n", encoding="utf-8")
    added = CorpusView.of(survey_corpus(tmp_path))
    assert added is not changed and len(added) == 3
    (tmp_path / "c.txt").unlink()
    removed = CorpusView.of(survey_corpus(tmp_path))
    assert removed is not added and [d.doc_id for d in removed.docs] == ["a.txt", "b.txt"]
    assert "lighthouse" not in removed.titles


def test_a_scan_of_documents_in_memory_gets_a_fresh_view(tmp_path):
    (tmp_path / "a.txt").write_text("Quill Point\nQuill Point is a cape.\n", encoding="utf-8")
    assert CorpusView.of(scan_corpus(tmp_path)) is not CorpusView.of(scan_corpus(tmp_path))


def test_views_of_different_folders_are_kept_apart(tmp_path, monkeypatch):
    from lens.reader import _filestats
    from lens.reader._filestats import survey_corpus

    monkeypatch.setattr(_filestats, "_RACY_NS", 0)
    for name, title in (("one", "Quill Point"), ("two", "Harbor Town")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.txt").write_text(f"{title}\n{title} is a place.\n", encoding="utf-8")
    one = CorpusView.of(survey_corpus(tmp_path / "one"))
    two = CorpusView.of(survey_corpus(tmp_path / "two"))
    assert one is not two and one.docs[0].title == "Quill Point" and two.docs[0].title == "Harbor Town"
    assert CorpusView.of(survey_corpus(tmp_path / "one")) is one
