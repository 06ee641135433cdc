"""Layer 1, the low-cost prior: each document of the folder scored before any oracle call — stage 3.

Entry: :class:`lens.prior._prior.Prior` (a :class:`~lens.reader._view.CorpusView`, cues and the memory's signal
in; ranked documents with each signal kept for the trace out). No LLM, no persistent index. Depends on
``lens.reader`` and the foundations.
"""
