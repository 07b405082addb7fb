"""kwire benchmarks. ``python -m bench`` runs every ``bench/*_bench.py`` module;
``python -m bench codec records`` runs only those whose name starts with a given word;
``--quick`` asks modules that support it for a shorter run.

Each module exposes ``run(quick=False) -> list of rows``
``(name, value, unit, budget, verdict)`` with verdict "PASS", "MISS", "info" or "n/a".
"""
import time


def best_seconds(fn, repeat: int, number: int) -> float:
    """Best seconds per call over ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best
