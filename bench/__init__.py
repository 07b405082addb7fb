"""kwire benchmarks. ``python -m bench`` runs every ``bench/*_bench.py`` module;
``python -m bench codec records`` runs only those whose name starts with a given word;
``--quick`` asks modules that support it for a shorter run.

Each module exposes ``run(quick=False) -> list of rows``
``(name, value, unit, budget, verdict)`` with verdict "PASS", "MISS", "info" or "n/a".
"""
