// KIP-848 consumer groups (group.protocol=consumer) on the stock Java client, committing through
// reassignments: run by tests/groups/test_kip848_java_commits.py against a kwire broker.
//
//   java -cp <jars>:<dir> Kip848Commits <bootstrap> <topic> <group> <partitions> <records>
//
// Three KafkaConsumers join one group one after another (each join moves partitions away from
// the members already in), then two leave (their partitions move to the one left), while the
// records are produced. Every member calls commitSync() after every poll that returned records:
// a commit refused during a reassignment (STALE_MEMBER_EPOCH, which Kafka 4.0-4.2 answered for a
// commit sent at the epoch before the revocation's acknowledgement; KIP-1251 in 4.3 accepts it
// for the partitions kept) throws CommitFailedException and fails the run. At the end each
// partition's committed offset is its end offset, and every record was read (at least once).
// Prints "OK commits=<n> members=<joins>" or throws (exit code 1).
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Kip848Commits {
    static String bootstrap, topic, group;
    static final AtomicInteger commits = new AtomicInteger();
    static final AtomicReference<Throwable> failure = new AtomicReference<>();
    static final Set<String> seen = ConcurrentHashMap.newKeySet();

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    /** A member: polls, commitSync() after each poll with records, until told to stop; then closes
     *  (leaving the group: its partitions move to the others). */
    static Thread member(String name, AtomicBoolean stop, java.util.concurrent.CountDownLatch assigned) {
        Thread t = new Thread(() -> {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.protocol", "consumer");
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("max.poll.records", "20");
            p.put("client.id", name);
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
                c.subscribe(List.of(topic));
                boolean counted = false;
                while (!stop.get() && failure.get() == null) {
                    var rs = c.poll(Duration.ofMillis(50));
                    if (!counted && !c.assignment().isEmpty()) { assigned.countDown(); counted = true; }
                    for (ConsumerRecord<String, String> r : rs) seen.add(r.partition() + ":" + r.offset());
                    if (!rs.isEmpty()) {
                        c.commitSync(Duration.ofSeconds(10));
                        commits.incrementAndGet();
                    }
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, new RuntimeException(name + " failed", e));
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    static void run(String[] args) throws Exception {
        bootstrap = args[0];
        topic = args[1];
        group = args[2];
        int partitions = Integer.parseInt(args[3]), n = Integer.parseInt(args[4]);
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin a = Admin.create(ap)) {
            a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("linger.ms", "0");
        AtomicBoolean doneProducing = new AtomicBoolean(false);
        Thread producer = new Thread(() -> {
            try (KafkaProducer<String, String> pr = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < n && failure.get() == null; i++) {   // spread over the join/leave sequence
                    pr.send(new ProducerRecord<>(topic, i % partitions, null, "v" + i)).get();
                    Thread.sleep(5);
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
            doneProducing.set(true);
        });
        producer.setDaemon(true);
        producer.start();

        List<AtomicBoolean> stops = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int m = 0; m < 3; m++) {   // join one by one: each join is a reassignment
            AtomicBoolean stop = new AtomicBoolean(false);
            java.util.concurrent.CountDownLatch assigned = new java.util.concurrent.CountDownLatch(1);
            stops.add(stop);
            threads.add(member("m" + m, stop, assigned));
            check(assigned.await(30, java.util.concurrent.TimeUnit.SECONDS) || failure.get() != null,
                  "m" + m + " got no partitions");
            Thread.sleep(700);   // some polls and commits on this assignment
        }
        for (int m = 2; m >= 1; m--) {   // two leave: their partitions move to m0
            stops.get(m).set(true);
            threads.get(m).join(30000);
            check(!threads.get(m).isAlive(), "m" + m + " did not close");
            Thread.sleep(700);
        }
        producer.join(60000);
        check(doneProducing.get(), "the producer did not finish");
        long until = System.currentTimeMillis() + 30000;
        while (seen.size() < n && failure.get() == null && System.currentTimeMillis() < until) Thread.sleep(50);
        stops.get(0).set(true);
        threads.get(0).join(30000);
        if (failure.get() != null) throw new AssertionError("a member failed", failure.get());
        check(seen.size() == n, "read " + seen.size() + " of " + n);
        try (Admin a = Admin.create(ap)) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                    a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            for (int p = 0; p < partitions; p++) {
                OffsetAndMetadata om = committed.get(new TopicPartition(topic, p));
                long want = n / partitions + (p < n % partitions ? 1 : 0);
                check(om != null && om.offset() == want, "partition " + p + " committed " + om + ", end " + want);
            }
        }
        System.out.println("OK commits=" + commits.get() + " members=3");
    }
}
