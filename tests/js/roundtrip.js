// KafkaJS against kwire: admin create, produce with each codec KafkaJS ships (none, gzip),
// keys, headers, null values, then a consumer group reads everything back.
// Usage: node roundtrip.js BOOTSTRAP TOPIC N
const { Kafka, CompressionTypes, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, nStr] = process.argv.slice(2);
  const n = parseInt(nStr, 10);
  const kafka = new Kafka({ clientId: "kwire-js", brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  const partitions = meta.topics[0].partitions.length;
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const sent = [];
  for (let i = 0; i < n; i++) {
    sent.push({ key: `k${i % 10}`, value: i % 17 === 0 ? null : `value-${i}`, headers: { idx: `${i}` } });
  }
  const half = Math.floor(n / 2);
  await producer.send({ topic, acks: -1, messages: sent.slice(0, half), compression: CompressionTypes.None });
  await producer.send({ topic, acks: -1, messages: sent.slice(half), compression: CompressionTypes.GZIP });
  await producer.disconnect();
  const offsets = await admin.fetchTopicOffsets(topic);
  const total = offsets.reduce((s, p) => s + Number(p.high) - Number(p.low), 0);

  const consumer = kafka.consumer({ groupId: `g-${topic}`, sessionTimeout: 10000, rebalanceTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout: got ${got.length}/${n}`)), 30000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        got.push({
          partition,
          key: message.key ? message.key.toString() : null,
          value: message.value === null ? null : message.value.toString(),
          idx: message.headers.idx.toString(),
        });
        if (got.length === n) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.commitOffsets([]).catch(() => {});
  const groupOffsets = await admin.fetchOffsets({ groupId: `g-${topic}`, topics: [topic] });
  await consumer.disconnect();
  await admin.disconnect();
  console.log(JSON.stringify({ partitions, total, got, groupOffsets }));
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
