"""The embedded model's server process: llama.cpp's own C++ OpenAI-compatible server, through ``xllamacpp``.

Run as ``python -m lens.llm._embedded_server --model GGUF --alias NAME --port N --ctx N --threads N``. The parent
(:mod:`lens.llm._embedded`) starts it on a loopback port and stops it with SIGTERM. ``xllamacpp`` ships llama.cpp
prebuilt for the x86-64 baseline that every AVX2 machine runs (SSE3, SSSE3, AVX, AVX2, F16C, FMA, BMI2; no
AVX-512, no AMX), so the same wheel works on any such host whatever extra features its CPU reports, and
nothing is compiled at install time.

The first line written to stdout (the server log) is ``LENS-RUNTIME {json}``: the runtime's name, version and
llama.cpp's ``system_info`` (the CPU features the build uses), which ``lens llm check`` reports.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

RUNTIME_TAG = "LENS-RUNTIME "


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lens.llm._embedded_server")
    ap.add_argument("--model", required=True)
    ap.add_argument("--alias", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    import xllamacpp

    info = {
        "runtime": "xllamacpp",
        "version": getattr(xllamacpp, "__version__", "unknown"),
        "system_info": xllamacpp.get_system_info().strip(),
    }
    print(RUNTIME_TAG + json.dumps(info), flush=True)

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = [args.alias]
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1  # one slot holding the whole context: requests queue, none is cut to n_ctx / slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.sampling.seed = 0

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)  # listens on 127.0.0.1:port until it is destroyed
    try:
        while not stop.wait(3600):
            pass
    finally:
        del server
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
