"""``python -m differential [--ci] [--only family,...] [--report PATH]``: run the corpora against a fresh
kwire and a fresh Apache Kafka, write the report, exit 1 on an unlisted difference."""
from __future__ import annotations

import argparse
import json
import signal
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m differential", description=__doc__)
    ap.add_argument("--ci", action="store_true", help="the small deterministic subset make test runs")
    ap.add_argument("--only", default="", help="comma-separated family names")
    ap.add_argument("--report", default="differential-report.json")
    ap.add_argument("--no-replay", action="store_true", help="skip the recorded stock-client sequences")
    args = ap.parse_args(argv)
    # a SIGTERM unwinds like ^C, so both brokers are stopped (by PID) on the way out
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    from differential.cases import FAMILIES
    from differential.run import run
    only = set(filter(None, args.only.split(",")))
    rep = run(FAMILIES, ci=args.ci, report_path=args.report, only=only or None)
    print(json.dumps({k: rep[k] for k in ("compared", "identical", "listed")} | {"unlisted": len(rep["unlisted"])}))
    for api_name, st in rep["per_api"].items():
        print(f"  {api_name:28} " + " ".join(f"{k}={v}" for k, v in sorted(st.items())))
    for u in rep["unlisted"][:40]:
        print(json.dumps(u)[:1500])
    return 1 if rep["unlisted"] else 0


if __name__ == "__main__":
    sys.exit(main())
