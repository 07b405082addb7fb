"""Run case families against a pair and compare; the report and the exit status.

Each family is ``Family(name, strategy, run, examples)``: hypothesis draws ``examples`` parameter sets
from ``strategy`` (derandomized: the same draws on every run, no database, no shrinking), and each set
runs once on Apache Kafka and once on kwire. Answers are aligned by position and compared field by
field after normalisation; every difference is looked up in docs/differences.md."""
from __future__ import annotations

import itertools
import json
import sys
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from differential import listed as listed_mod
from differential.compare import diff, pattern_path
from differential.normalise import Normaliser
from differential.pair import Pair
from differential.session import Session
from differential.wire import Outcome


@dataclass
class Family:
    name: str
    strategy: Any                   # a hypothesis strategy of the params run() takes
    run: Callable[[Session, Any], None]
    examples: int = 20
    ci_examples: int = 5            # how many `make test` runs
    secured: bool = False           # runs on the secured pair (SASL_PLAINTEXT, StandardAuthorizer)


def outcome_tree(out: Outcome, norm: Normaliser) -> dict:
    if out.kind == "response" and out.body is not None:
        return {"outcome": "response", **norm.struct(out.body)}
    if out.kind == "undecodable":
        return {"outcome": "undecodable"}
    return {"outcome": out.kind}


class Results:
    def __init__(self, rows: list[listed_mod.Listed]):
        self.rows = rows
        self.compared = self.identical = self.listed = 0
        self.unlisted: list[dict] = []
        self.per_api: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.used: dict[str, int] = defaultdict(int)

    def add(self, family: str, n: int, params, kafka_log: list, kwire_log: list,
            kafka_norm: Normaliser, kwire_norm: Normaliser, errors: dict) -> None:
        for side, err in errors.items():
            if err:
                self._unlisted(family, n, params, "(case)", "-", 0, [(f"error on {side}", "", err)])
        for i in range(max(len(kafka_log), len(kwire_log))):
            a = kafka_log[i] if i < len(kafka_log) else None
            b = kwire_log[i] if i < len(kwire_log) else None
            label, api_name, version = (a or b)[:3]
            stats = self.per_api[api_name]
            self.compared += 1
            stats["compared"] += 1
            if a is None or b is None or a[:3] != b[:3]:
                # one side sent a request the other did not (its connection closed, or an answer
                # took the case elsewhere)
                ds = [("sequence", list(a[:3]) if a else None, list(b[:3]) if b else None)]
            else:
                ta, tb = outcome_tree(a[3], kafka_norm), outcome_tree(b[3], kwire_norm)
                if ta["outcome"] != tb["outcome"]:
                    ds = [("outcome", ta["outcome"], tb["outcome"])]
                else:
                    ds = diff(ta, tb)
            if not ds:
                self.identical += 1
                stats["identical"] += 1
                continue
            open_ = []
            for path, ka, kw in ds:
                where = f"{family}/{api_name}.v{version}.{pattern_path(path)}"
                row = listed_mod.match(self.rows, where, ka, kw)
                if row is None:
                    open_.append((path, ka, kw))
                else:
                    self.used[row.id] += 1
            if open_:
                self._unlisted(family, n, params, label, api_name, version, open_)
                stats["unlisted"] += 1
            else:
                self.listed += 1
                stats["listed"] += 1

    def _unlisted(self, family, n, params, label, api_name, version, ds) -> None:
        self.unlisted.append({
            "family": family, "case": n, "request": label, "api": api_name, "version": version,
            "params": repr(params)[:500],
            "differences": [{"path": p, "kafka": _short(ka), "kwire": _short(kw)} for p, ka, kw in ds][:20],
        })

    def report(self) -> dict:
        return {"compared": self.compared, "identical": self.identical, "listed": self.listed,
                "unlisted": self.unlisted,
                "per_api": {k: dict(v) for k, v in sorted(self.per_api.items())},
                "listed_ids_used": dict(sorted(self.used.items()))}


def _short(v):
    s = listed_mod.render(v)
    return s if len(s) <= 400 else s[:400] + "..."


def run_family(pair: Pair, fam: Family, results: Results, examples: int, counter) -> None:
    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
              report_multiple_bugs=False)
    @given(fam.strategy)
    def body(params):
        n = next(counter)
        logs, norms, errors = {}, {}, {}
        for side in pair.sides:
            s = Session(side, n, fam.name)
            errors[side.name] = None
            try:
                fam.run(s, params)
            except Exception as exc:  # noqa: BLE001 - a case that breaks on one side is a result
                errors[side.name] = f"{type(exc).__name__}: {exc}"[:300]
                traceback.print_exc()
            finally:
                s.close()
            logs[side.name] = s.log
            norms[side.name] = Normaliser(side.topic_ids)
        # normalise after both ran: topic ids learnt late still map to names
        results.add(fam.name, n, params, logs["kafka"], logs["kwire"], norms["kafka"], norms["kwire"], errors)

    body()


def run(families: list[Family], *, ci: bool = False, pair: Pair | None = None,
        report_path: str | None = "differential-report.json", only: set[str] | None = None,
        secured_pair: Pair | None = None) -> dict:
    """Each pair (plain, secured) is started only when a selected family needs it, one after the
    other (two Kafka JVMs at once would crowd a small machine)."""
    results = Results(listed_mod.load())
    counter = itertools.count()
    selected = [f for f in families if (not only or f.name in only) and (f.ci_examples if ci else f.examples) > 0]
    for secured, given in ((False, pair), (True, secured_pair)):
        fams = [f for f in selected if f.secured == secured]
        if not fams:
            continue
        p = given or Pair(secured=secured).start()
        try:
            for fam in fams:
                t0, before = time.monotonic(), results.compared
                run_family(p, fam, results, fam.ci_examples if ci else fam.examples, counter)
                print(f"differential: {fam.name}: {results.compared - before} requests compared in "
                      f"{time.monotonic() - t0:.1f} s, {len(results.unlisted)} unlisted so far", file=sys.stderr,
                      flush=True)
        finally:
            if given is None:
                p.close()
    rep = results.report()
    if report_path:
        with open(report_path, "w") as f:
            json.dump(rep, f, indent=1, default=str)
    return rep


# a strategy helper the families share
names = st.sampled_from
