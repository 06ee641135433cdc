"""harness.bench.systems exports exactly its public names, each of them importable."""

import harness.bench.systems as systems

PUBLIC = {
    "SYSTEM_NAMES",
    "ArmPlan",
    "ArmSettings",
    "BM25Retriever",
    "ClosedBookSystem",
    "HybridRetriever",
    "IndexBuild",
    "IndexStore",
    "LensSystem",
    "LiveSearch",
    "Passage",
    "Prediction",
    "QuestionBudget",
    "RAGSystem",
    "ReActSystem",
    "RetrievedDoc",
    "RunLevelError",
    "SnapshotCorpus",
    "SnapshotDoc",
    "System",
    "build_systems",
    "index_free",
    "parse_step",
    "parse_systems",
    "prediction_from_result",
    "prepare_indexes",
    "reads_corpus",
}


def test_all_is_exactly_the_public_names():
    assert set(systems.__all__) == PUBLIC
    assert all(hasattr(systems, name) for name in PUBLIC)


def test_the_five_arms_in_the_papers_terms_the_two_controls_and_the_peer():
    assert systems.SYSTEM_NAMES == (
        "lens",
        "react",
        "bm25",
        "bm25-span",
        "hybrid",
        "closed",
        "gold-passages",
        "paperqa",
    )
    flags = [(systems.index_free(n), systems.reads_corpus(n)) for n in systems.SYSTEM_NAMES]
    assert flags == [
        (True, True),
        (True, True),
        (False, True),
        (False, True),
        (False, True),
        (True, False),
        (True, True),
        (False, True),  # PaperQA2 keeps its own index of the folder
    ]
