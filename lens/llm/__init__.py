"""LLM access: one client for every system, the embedded llama.cpp default, the response cache, cost
accounting and the prompt templates.

Entry: :func:`lens.llm._llm.open_client` (the configuration in; an :class:`~lens.llm._llm.LLMClient` out, talking
to any OpenAI-compatible endpoint or to the embedded server it starts). Depends only on the foundations.
"""
