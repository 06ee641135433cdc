"""Fixtures for every test: no test reads the developer's own lens config (``LENS_USER_CONFIG`` empty)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch):
    monkeypatch.setenv("LENS_USER_CONFIG", "")


@pytest.fixture(autouse=True)
def _own_stats_store(monkeypatch, tmp_path_factory):
    """Each test's file statistics in a store of its own (never the developer's user cache); closed after it."""
    from lens.reader import _filestats

    folder = tmp_path_factory.mktemp("stats")
    monkeypatch.setattr(_filestats, "default_store_path", lambda: folder / "stats.sqlite")
    yield
    with _filestats._STORES_LOCK:
        for store in _filestats._STORES.values():
            store.close()
        _filestats._STORES.clear()
    _filestats._FOLDERS.clear()
