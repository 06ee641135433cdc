"""Prompt templates of the benchmark baselines (ReAct, RAG, Closed-Book): package data, read with ``lens.render(name, package="harness.prompts")``."""
