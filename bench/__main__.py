"""``python -m bench [--quick] [name ...]``: run the benchmark modules and print a summary."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import time
import traceback
from pathlib import Path


def modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.endswith("_bench"))


def select(wanted: list[str], names: list[str]) -> list[str]:
    """The modules ``wanted`` names: a whole name picks its module alone (``spark`` is spark_bench,
    not spark_kafka_bench too, whose Spark session needs jars that a session already started
    without them cannot load), a prefix every module it begins."""
    return [n for n in names if any(n == f"{w}_bench" or (n.startswith(w) and f"{w}_bench" not in names)
                                    for w in wanted)]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    # ``vs-kafka`` names bench/vs_kafka_bench.py: module names take no hyphen
    wanted = [a.replace("-", "_") for a in argv if not a.startswith("-")]
    names = modules()
    if wanted:
        unknown = [w for w in wanted if not any(n.startswith(w) for n in names)]
        if unknown:
            print(f"unknown benchmark(s) {unknown}; have {[n[:-6] for n in names]}", file=sys.stderr)
            return 2
        names = select(wanted, names)
    summary: list[tuple] = []
    failed: list[str] = []
    for name in names:
        print(f"\n=== bench.{name}", flush=True)
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"bench.{name}")
            run = mod.run
            rows = run(quick=quick) if "quick" in inspect.signature(run).parameters else run()
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
            traceback.print_exc()
            failed.append(name)
            continue
        summary += list(rows or [])
        print(f"({name}: {time.perf_counter() - t0:.1f} s)", flush=True)

    if summary:
        counts = {v: sum(1 for r in summary if r[-1] == v) for v in ("PASS", "MISS", "info", "n/a")}
        print("\n=== summary: " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
        for r in summary:
            if r[-1] == "MISS":
                print(f"MISS  {r[0]}: {r[1]} {r[2]} (budget {r[3]})")
    if failed:
        print(f"benchmarks that crashed: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
