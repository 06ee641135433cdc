"""Fixtures for every test: no test reads the developer's own lens config (``LENS_USER_CONFIG`` empty)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch):
    monkeypatch.setenv("LENS_USER_CONFIG", "")
