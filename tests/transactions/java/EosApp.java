// An exactly-once consume-transform-produce application on the stock Java client (kafka-clients
// 4.x), the Java twin of tests/integration/eos_app.py: same arguments, same output lines, so
// tests/integration/eos_runner.EosApp runs either. Against a broker that finalizes
// transaction.version=2 the producer uses transaction version 2 (KIP-890 part 2: no
// AddPartitionsToTxn / AddOffsetsToTxn, an epoch bump per EndTxn); it prints "TV <1|2>" first.
//
//   java -cp <jars>:<dir> EosApp --bootstrap B --input I --output O --group G --transactional-id T
//        [--instance-id ID] [--batch N] [--hold-at K] [--transaction-timeout-ms MS] [--timeout S]
//
// It reads I as a static member of G, writes "out:<value>" to the same partition of O and sends
// the consumed positions with the records in one transaction. Errors are handled the way the
// client documents them: a fatal one (fenced, ...) exits with status 3; any other KafkaException
// aborts the transaction and rewinds the consumer to the group's committed offsets; a timeout of
// sendOffsetsToTransaction / commitTransaction is retried (the client allows calling them again).
// Lines: READY <n>, COMMITTED <n> (input records whose offsets are committed), ABORTED <reason>,
// RETRY <reason>, HOLD, FATAL <reason>, DONE. With --hold-at K the K-th transaction stops after its
// records are flushed and its offsets sent and waits to be killed. Exits 0 after DONE, once the
// committed offsets reach the input's end offsets as they were at start.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class EosApp {
    final Map<String, String> a = new HashMap<>();
    KafkaConsumer<byte[], byte[]> consumer;
    KafkaProducer<byte[], byte[]> producer;
    final Map<Integer, Long> committed = new HashMap<>();
    final Map<Integer, Long> end = new HashMap<>();
    Duration timeout;

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        EosApp app = new EosApp();
        for (int i = 0; i + 1 < args.length; i += 2) app.a.put(args[i].substring(2), args[i + 1]);
        try {
            System.exit(app.run());
        } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                 | UnsupportedVersionException | InvalidProducerEpochException e) {
            say("FATAL " + e);
            System.exit(3);
        }
    }

    String arg(String name, String dflt) {
        return a.getOrDefault(name, dflt);
    }

    void open() {
        timeout = Duration.ofMillis((long) (Double.parseDouble(arg("timeout", "30")) * 1000));
        Properties c = new Properties();
        c.put("bootstrap.servers", arg("bootstrap", null));
        c.put("group.id", arg("group", null));
        c.put("group.instance.id", arg("instance-id", "eos-app-0"));
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        c.put("session.timeout.ms", "10000");
        c.put("max.poll.records", arg("batch", "20"));
        c.put("reconnect.backoff.max.ms", "500");
        c.put("metadata.max.age.ms", "2000");
        consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        Properties p = new Properties();
        p.put("bootstrap.servers", arg("bootstrap", null));
        p.put("transactional.id", arg("transactional-id", null));
        p.put("transaction.timeout.ms", arg("transaction-timeout-ms", "30000"));
        p.put("delivery.timeout.ms", arg("transaction-timeout-ms", "30000"));
        p.put("request.timeout.ms", "10000");
        p.put("linger.ms", "5");
        p.put("max.block.ms", String.valueOf(timeout.toMillis()));
        p.put("reconnect.backoff.max.ms", "500");
        p.put("metadata.max.age.ms", "2000");
        producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    int tv() throws ReflectiveOperationException {
        java.lang.reflect.Field f = KafkaProducer.class.getDeclaredField("transactionManager");
        f.setAccessible(true);
        Object tm = f.get(producer);
        return (Boolean) tm.getClass().getMethod("isTransactionV2Enabled").invoke(tm) ? 2 : 1;
    }

    List<TopicPartition> inputPartitions() {
        List<TopicPartition> out = new ArrayList<>();
        for (PartitionInfo pi : consumer.partitionsFor(arg("input", null), timeout))
            out.add(new TopicPartition(pi.topic(), pi.partition()));
        return out;
    }

    void refreshCommitted(List<TopicPartition> tps) {
        Map<TopicPartition, OffsetAndMetadata> got = consumer.committed(Set.copyOf(tps), timeout);
        for (TopicPartition tp : tps) {
            OffsetAndMetadata om = got.get(tp);
            committed.put(tp.partition(), om == null ? 0L : om.offset());
        }
    }

    boolean done() {
        for (Map.Entry<Integer, Long> e : end.entrySet())
            if (committed.getOrDefault(e.getKey(), 0L) < e.getValue()) return false;
        return true;
    }

    long total() {
        long n = 0;
        for (long v : committed.values()) n += v;
        return n;
    }

    int run() throws Exception {
        open();
        producer.initTransactions();           // fences and aborts a predecessor
        say("TV " + tv());
        List<TopicPartition> parts = inputPartitions();
        for (Map.Entry<TopicPartition, Long> e : consumer.endOffsets(parts, timeout).entrySet())
            end.put(e.getKey().partition(), e.getValue());
        consumer.subscribe(List.of(arg("input", null)));
        refreshCommitted(parts);
        say("READY " + total());
        int batch = Integer.parseInt(arg("batch", "20"));
        int holdAt = Integer.parseInt(arg("hold-at", "0"));
        int txns = 0;
        while (!done()) {
            ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(500));
            if (polled.isEmpty()) continue;
            List<ConsumerRecord<byte[], byte[]>> msgs = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : polled) msgs.add(r);
            txns++;
            try {
                transact(msgs, txns == holdAt);
            } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                     | UnsupportedVersionException | InvalidProducerEpochException e) {
                throw e;
            } catch (KafkaException e) {
                say("ABORTED " + e);
                abort();
                rewind();
            }
        }
        say("DONE");
        consumer.close();
        producer.close(timeout);
        return 0;
    }

    void transact(List<ConsumerRecord<byte[], byte[]>> msgs, boolean hold) throws InterruptedException {
        producer.beginTransaction();
        String out = arg("output", null);
        for (ConsumerRecord<byte[], byte[]> m : msgs) {
            byte[] v = m.value();
            byte[] t = new byte[v.length + 4];
            System.arraycopy("out:".getBytes(), 0, t, 0, 4);
            System.arraycopy(v, 0, t, 4, v.length);
            producer.send(new ProducerRecord<>(out, m.partition(), m.key(), t));
        }
        Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
        for (TopicPartition tp : consumer.assignment())
            positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
        retry(() -> producer.sendOffsetsToTransaction(positions, consumer.groupMetadata()));
        if (hold) {
            producer.flush();
            say("HOLD");
            Thread.sleep(Long.MAX_VALUE);       // until SIGKILL
        }
        retry(producer::commitTransaction);
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : positions.entrySet())
            committed.put(e.getKey().partition(), e.getValue().offset());
        say("COMMITTED " + total());
    }

    void retry(Runnable op) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                op.run();
                return;
            } catch (TimeoutException e) {
                if (System.nanoTime() > deadline) throw e;
                say("RETRY " + e.getMessage());
            }
        }
    }

    void abort() {
        retry(producer::abortTransaction);
    }

    void rewind() {
        Set<TopicPartition> assigned = consumer.assignment();
        if (assigned.isEmpty()) return;
        Map<TopicPartition, OffsetAndMetadata> got = consumer.committed(assigned, timeout);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata om = got.get(tp);
            consumer.seek(tp, om == null ? 0L : om.offset());
        }
    }
}
