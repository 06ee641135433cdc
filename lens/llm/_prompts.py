"""Prompt templates (``prompts/*.md``, shipped as package data ``lens.prompts``) and document fencing.

A template file holds the system message, a line ``---- user ----``, then the user message. Placeholders are
``$name`` (string.Template), so JSON braces in templates need no escaping and substituted values are never
re-parsed. Document text only ever enters a prompt through ``fence_passage``, which wraps it in
``<passage>`` tags and neutralises anything inside that could close or open a tag.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from string import Template

__all__ = ["render", "fence_passage", "PROMPT_NAMES"]

PROMPT_NAMES = (
    "decomposition",
    "decomposition-comparison",
    "reading",
    "coverage",
    "synthesis",
    "shorten",
)
_SPLIT = "---- user ----"


@lru_cache(maxsize=None)
def _template(package: str, name: str) -> tuple[Template, Template]:
    text = resources.files(package).joinpath(f"{name}.md").read_text(encoding="utf-8")
    if _SPLIT not in text:
        raise ValueError(f"{package}/{name}.md: missing the '{_SPLIT}' separator line")
    system, user = text.split(_SPLIT, 1)
    return Template(system.strip()), Template(user.strip())


def render(name: str, *, package: str = "lens.prompts", **values: str) -> list[dict[str, str]]:
    """Chat messages for template ``name`` (``<package>/<name>.md``; another package may keep its own
    templates in the same format) with ``$placeholders`` filled (all must be given)."""
    system, user = _template(package, name)
    return [
        {"role": "system", "content": system.substitute(**values)},
        {"role": "user", "content": user.substitute(**values)},
    ]


_TAG = re.compile(r"</?\s*passage", re.IGNORECASE)


def fence_passage(pid: str, source: str, sentences: list[tuple[int, str]]) -> str:
    """A document window as data: numbered sentences inside ``<passage>`` tags that the text cannot close."""
    body = "\n".join(f"[{i}] {_TAG.sub('(passage', s)}" for i, s in sentences)
    src = _TAG.sub("(passage", source).replace('"', "'")
    return f'<passage id="{pid}" source="{src}">\n{body}\n</passage>'
