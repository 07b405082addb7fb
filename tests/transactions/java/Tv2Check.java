// Transaction version 2 (KIP-890 part 2) scenarios on the stock Java client (kafka-clients 4.x),
// run by tests/transactions/test_tv2_java.py against a kwire broker that finalizes
// transaction.version=2. Each scenario prints "OK <scenario> ..." or throws (exit code 1).
//
//   java -cp <jars>:<dir> Tv2Check <bootstrap> <scenario> <topic> <transactional id> [<group>]
//
// commit:  TV2 is in use; txn 1 commits, txn 2 aborts, txn 3 commits (10 records each); a
//          read_committed consumer sees txns 1 and 3 in order, read_uncommitted all 30.
// fence:   producer A's transaction is open when producer B (same transactional.id) initialises:
//          A's commit fails (fenced), B's own transaction commits; read_committed sees only B's.
// offsets: sendOffsetsToTransaction (TxnOffsetCommit v5, no AddOffsetsToTxn): offsets of an
//          aborted transaction never show, those of a committed one do.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Tv2Check {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String scenario = args[1], topic = args[2], tid = args[3];
        switch (scenario) {
            case "commit" -> commit(topic, tid);
            case "fence" -> fence(topic, tid);
            case "offsets" -> offsets(topic, tid, args[4]);
            default -> throw new IllegalArgumentException(scenario);
        }
    }

    static KafkaProducer<String, String> producer(String tid) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("max.block.ms", "30000");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static boolean tv2(KafkaProducer<?, ?> producer) throws ReflectiveOperationException {
        java.lang.reflect.Field f = KafkaProducer.class.getDeclaredField("transactionManager");
        f.setAccessible(true);
        Object tm = f.get(producer);
        return (Boolean) tm.getClass().getMethod("isTransactionV2Enabled").invoke(tm);
    }

    static void requireTv2(KafkaProducer<?, ?> producer) throws ReflectiveOperationException {
        if (!tv2(producer)) throw new AssertionError("the producer did not take transaction version 2");
    }

    static void send(KafkaProducer<String, String> p, String topic, String prefix, int n) {
        for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, 0, null, prefix + "-" + i));
    }

    static List<String> read(String topic, String isolation, int expected) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", isolation);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 15000;
            // read until the position passes the log end (the last marker included), then a little more
            long end = consumer.endOffsets(List.of(tp)).get(tp);
            while (System.currentTimeMillis() < deadline && (consumer.position(tp) < end || out.size() < expected)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) out.add(r.value());
                if (out.size() > expected) break;
            }
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(300))) out.add(r.value());
        }
        return out;
    }

    static List<String> expect(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(prefix + "-" + i);
        return out;
    }

    static void check(String what, Object expected, Object actual) {
        if (!expected.equals(actual)) throw new AssertionError(what + ": expected " + expected + ", got " + actual);
    }

    static void commit(String topic, String tid) throws Exception {
        try (KafkaProducer<String, String> p = producer(tid)) {
            p.initTransactions();
            requireTv2(p);
            p.beginTransaction();
            send(p, topic, "t1", 10);
            p.commitTransaction();
            p.beginTransaction();
            send(p, topic, "t2", 10);
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            send(p, topic, "t3", 10);
            p.commitTransaction();
        }
        List<String> want = expect("t1", 10);
        want.addAll(expect("t3", 10));
        check("read_committed", want, read(topic, "read_committed", 20));
        List<String> all = expect("t1", 10);
        all.addAll(expect("t2", 10));
        all.addAll(expect("t3", 10));
        check("read_uncommitted", all, read(topic, "read_uncommitted", 30));
        System.out.println("OK commit");
    }

    static void fence(String topic, String tid) throws Exception {
        KafkaProducer<String, String> a = producer(tid);
        a.initTransactions();
        requireTv2(a);
        a.beginTransaction();
        send(a, topic, "a", 5);
        a.flush();
        try (KafkaProducer<String, String> b = producer(tid)) {
            b.initTransactions();   // fences A and aborts its open transaction
            requireTv2(b);
            boolean fenced = false;
            try {
                send(a, topic, "a-late", 5);
                a.commitTransaction();
            } catch (KafkaException e) {
                fenced = true;
                System.out.println("A fenced: " + e.getClass().getSimpleName());
            }
            a.close(Duration.ofSeconds(5));
            if (!fenced) throw new AssertionError("the zombie producer committed");
            b.beginTransaction();
            send(b, topic, "b", 5);
            b.commitTransaction();
        }
        check("read_committed", expect("b", 5), read(topic, "read_committed", 5));
        System.out.println("OK fence");
    }

    static Map<TopicPartition, OffsetAndMetadata> committed(String group, TopicPartition tp) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("enable.auto.commit", "false");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            return consumer.committed(Set.of(tp), Duration.ofSeconds(15));
        }
    }

    static void offsets(String topic, String tid, String group) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        ConsumerGroupMetadata meta = new ConsumerGroupMetadata(group);
        try (KafkaProducer<String, String> p = producer(tid)) {
            p.initTransactions();
            requireTv2(p);
            p.beginTransaction();
            send(p, topic, "x", 3);
            p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(7)), meta);
            p.abortTransaction();
            OffsetAndMetadata after = committed(group, tp).get(tp);
            if (after != null) throw new AssertionError("offsets of an aborted transaction: " + after);
            p.beginTransaction();
            send(p, topic, "y", 3);
            p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(42)), meta);
            p.commitTransaction();
        }
        OffsetAndMetadata got = committed(group, tp).get(tp);
        check("committed offset", 42L, got == null ? null : got.offset());
        check("read_committed", expect("y", 3), read(topic, "read_committed", 3));
        System.out.println("OK offsets");
    }
}
