"""The root of the errors lens raises on bad input or an unusable environment.

The CLI turns any ``LensError`` into one line on stderr and a non-zero exit; each subclass's message names the
input (file, record, field, flag) and what is wrong with it.
"""

from __future__ import annotations

__all__ = ["LensError"]


class LensError(Exception):
    """A known failure with a message meant for the user."""
