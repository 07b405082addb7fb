"""``kwire cluster``: the cluster id (kafka-cluster.sh cluster-id), its brokers and controller
(DescribeCluster), and the KRaft quorum (kafka-metadata-quorum.sh describe --status /
--replication, from DescribeQuorum, which Kafka and kwire brokers answer)."""
from __future__ import annotations

import argparse
import time

from kwire.admin.common import add_common, client, java_fmt, run

EPILOG = """\
examples:
  kwire cluster id                       Cluster ID: ...
  kwire cluster describe                 the brokers and the active controller
  kwire cluster quorum                   leader, epoch, high watermark, voters, observers
  kwire cluster quorum --replication     each voter's and observer's log end offset and lag
  kwire metadata-quorum describe --status        the same, in kafka-metadata-quorum.sh's words
"""


def add_parser(sub) -> None:
    p = sub.add_parser("cluster", help="cluster id, brokers, controller, KRaft quorum",
                       description="Describe a cluster: its id, brokers, controller and metadata quorum.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("id", "describe", "quorum"), help="id, describe or quorum")
    add_common(p)
    p.add_argument("--replication", action="store_true", help="quorum: one line per voter and observer")
    p.set_defaults(cmd="cluster", run=lambda args: run("cluster", _main, args))

    # kafka-metadata-quorum.sh's own words: describe --status | --replication
    q = sub.add_parser("metadata-quorum", help="the KRaft quorum (kafka-metadata-quorum.sh describe)",
                       description="Describe the KRaft metadata quorum, as kafka-metadata-quorum.sh describe does.")
    q.add_argument("action", choices=("describe",), help="describe")
    add_common(q)
    shape = q.add_mutually_exclusive_group(required=True)
    shape.add_argument("--status", action="store_true", help="leader, epoch, high watermark, voters, observers")
    shape.add_argument("--replication", action="store_true", help="one line per voter and observer")
    q.set_defaults(what="quorum", cmd="metadata-quorum", run=lambda args: run("metadata-quorum", _main, args))


def _main(args) -> int:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    with client(args, args.cmd) as c:
        if args.what == "id":
            c.metadata([])
            print(f"Cluster ID: {c.cluster_id}")
            return 0
        if args.what == "describe":
            body, _ = c.call("DescribeCluster", include_cluster_authorized_operations=False, endpoint_type=1)
            if body.error_code:
                raise AdminError(f"DescribeCluster: {error_name(body.error_code)}", body.error_code)
            print(f"Cluster ID: {body.cluster_id}")
            print(f"Controller: {body.controller_id}")
            print("Brokers:")
            for b in sorted(body.brokers, key=lambda b: b.broker_id):
                rack = f" (rack {b.rack})" if b.rack else ""
                print(f"  {b.broker_id} at {b.host}:{b.port}{rack}")
            return 0
        T = c.struct("DescribeQuorum", "TopicData")
        P = c.struct("DescribeQuorum", "PartitionData")
        body, _ = c.call("DescribeQuorum", topics=[T(topic_name="__cluster_metadata",
                                                     partitions=[P(partition_index=0)])])
        if body.error_code:
            raise AdminError(f"DescribeQuorum: {error_name(body.error_code)}", body.error_code)
        p = body.topics[0].partitions[0]
        if p.error_code:
            raise AdminError(f"DescribeQuorum: {error_name(p.error_code)}", p.error_code)
        if args.replication:
            now = int(time.time() * 1000)
            w = [8, 15, 7, 20, 23, 0]
            print(java_fmt(w, ["NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp",
                               "Status"]))
            for kind, reps in (("Voter", p.current_voters), ("Observer", p.observers)):
                for r in sorted(reps, key=lambda r: r.replica_id):
                    status = "Leader" if r.replica_id == p.leader_id else ("Follower" if kind == "Voter" else kind)
                    print(java_fmt(w, [r.replica_id, r.log_end_offset, max(0, p.high_watermark - r.log_end_offset),
                                       _ago(now, r.last_fetch_timestamp), _ago(now, r.last_caught_up_timestamp),
                                       status]))
            return 0
        c.metadata([])
        lags = [max(0, p.high_watermark - r.log_end_offset) for r in p.current_voters]
        now = int(time.time() * 1000)
        lag_ms = [now - r.last_caught_up_timestamp for r in p.current_voters
                  if r.replica_id != p.leader_id and r.last_caught_up_timestamp > 0]
        print(f"ClusterId:              {c.cluster_id}")
        print(f"LeaderId:               {p.leader_id}")
        print(f"LeaderEpoch:            {p.leader_epoch}")
        print(f"HighWatermark:          {p.high_watermark}")
        print(f"MaxFollowerLag:         {max(lags) if lags else 0}")
        print(f"MaxFollowerLagTimeMs:   {max(lag_ms) if lag_ms else 0}")
        print(f"CurrentVoters:          [{','.join(str(r.replica_id) for r in sorted(p.current_voters, key=lambda r: r.replica_id))}]")
        print(f"CurrentObservers:       [{','.join(str(r.replica_id) for r in sorted(p.observers, key=lambda r: r.replica_id))}]")
    return 0


def _ago(now: int, ts: int) -> str:
    return "-" if ts is None or ts < 0 else f"{max(0, now - ts)} ms ago"
