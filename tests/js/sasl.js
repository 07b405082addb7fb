// KafkaJS over SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), optionally over TLS: produce N
// records, read them back in a consumer group. A refused login prints {"error": ...}.
// Usage: node sasl.js BOOTSTRAP TOPIC N MECHANISM USER PASSWORD [CA_FILE]
// (MECHANISM "none": no SASL, for an SSL listener; USER and PASSWORD are then ignored)
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, nStr, mechanism, username, password, caFile] = process.argv.slice(2);
  const n = parseInt(nStr, 10);
  const kafka = new Kafka({
    clientId: "kwire-js-sasl",
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    ssl: caFile ? { ca: [fs.readFileSync(caFile, "utf-8")] } : false,
    sasl: mechanism.toLowerCase() === "none" ? undefined : { mechanism: mechanism.toLowerCase(), username, password },
    retry: { retries: 2, initialRetryTime: 100 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    await producer.connect();
  } catch (e) {
    console.log(JSON.stringify({ error: e.name, message: e.message, type: e.type || null }));
    return;
  }
  const messages = [];
  for (let i = 0; i < n; i++) messages.push({ key: `k${i}`, value: `${mechanism}-${i}` });
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `js-${topic}`, sessionTimeout: 10000, rebalanceTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout: got ${got.length}/${n}`)), 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString());
        if (got.length === n) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  console.log(JSON.stringify({ got }));
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
