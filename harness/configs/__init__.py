"""Packaged audit configurations (``lens audit run --config audit-small`` loads ``audit-small.toml`` from here)."""
