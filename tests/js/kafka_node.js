// kafka-node (an old pure-JavaScript client: protocol versions of Kafka 0.9-0.11) against kwire,
// driven by compat_tests/test_kafka_node.py.
// Usage: node kafka_node.js produce BOOTSTRAP TOPIC N PREFIX
//        node kafka_node.js group BOOTSTRAP TOPIC GROUP N
// Prints one JSON line: {"offsets": [...], "values": [...]} or {"error": "..."} (exit 1).
const kafka = require("kafka-node");

function done(out, code) {
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(code);
}

function fail(err) {
  done({ error: String(err && err.message ? `${err.name || "Error"}: ${err.message}` : err) }, 1);
}

const [op, bootstrap, topic, ...rest] = process.argv.slice(2);
const timeoutMs = parseInt(process.env.KAFKA_NODE_TIMEOUT_MS || "15000", 10);
setTimeout(() => fail(`${op}: no result in ${timeoutMs} ms`), timeoutMs).unref();

function client() {
  return new kafka.KafkaClient({ kafkaHost: bootstrap, connectTimeout: 5000, requestTimeout: 5000,
                                 connectRetryOptions: { retries: 1, minTimeout: 200, maxTimeout: 500 } });
}

if (op === "produce") {
  const [nStr, prefix] = rest;
  const n = parseInt(nStr, 10);
  const c = client();
  const producer = new kafka.Producer(c, { requireAcks: -1, ackTimeoutMs: 5000, partitionerType: 0 });
  producer.on("error", fail);
  producer.on("ready", () => {
    const messages = [];
    for (let i = 0; i < n; i++) messages.push(new kafka.KeyedMessage("k", `${prefix}${i}`));
    // attributes 1: gzip (kafka-node compresses the message set itself)
    producer.send([{ topic, partition: 0, messages, attributes: 1 }], (err, data) => {
      if (err) return fail(err);
      const base = data[topic][0];
      const offsets = [];
      for (let i = 0; i < n; i++) offsets.push(base + i);
      producer.close(() => done({ offsets, values: [], versions: c.apiSupport || null }, 0));
    });
  });
} else if (op === "group") {
  const [group, nStr] = rest;
  const n = parseInt(nStr, 10);
  const got = { offsets: [], values: [] };
  const cg = new kafka.ConsumerGroup({ kafkaHost: bootstrap, groupId: group, fromOffset: "earliest",
                                       autoCommit: false, sessionTimeout: 10000, heartbeatInterval: 1000,
                                       fetchMaxWaitMs: 100, encoding: "utf8", protocol: ["roundrobin"],
                                       connectRetryOptions: { retries: 1, minTimeout: 200, maxTimeout: 500 } },
                                     [topic]);
  cg.on("error", fail);
  let finished = false;
  cg.on("message", (m) => {
    if (finished) return;
    got.offsets.push(m.offset);
    got.values.push(m.value);
    if (got.offsets.length >= n) {
      finished = true;
      cg.pause();
      // the group's payload offsets move when a fetch's messages are all emitted: set the
      // position to after the last record taken, then commit it (OffsetCommit v2)
      cg.setOffset(m.topic, m.partition, m.offset + 1);
      cg.commit(true, (err) => {
        if (err) return fail(err);
        cg.close(false, () => done(got, 0));
      });
    }
  });
} else {
  fail(`unknown op ${op}`);
}
