// Share-group (KIP-932) scenarios on the stock Java client (kafka-clients 4.x: KafkaShareConsumer
// and Admin), run by tests/share/test_share_java.py against a kwire broker emulating Kafka 4.3.
// Several scenarios run in one JVM (the JVM start is the main cost); each prints
// "OK <scenario> ..." or throws (exit code 1).
//
//   java -cp <jars>:<dir> ShareCheck <bootstrap> <scenario>[,<scenario>...] <prefix>
//   java -cp <jars>:<dir> ShareCheck <bootstrap> victim <topic> <group>
//
// share3:   3 share consumers on one partition: every record delivered once, to one of them;
//           Admin describeShareGroups shows the 3 members sharing the partition, listGroups
//           shows the group as type share.
// acks:     explicit acknowledgement: ACCEPT, RELEASE (delivered again, count 2), REJECT (never).
// poison:   a record released on every delivery is archived at the delivery count limit
//           (the broker's group.share.delivery.count.limit, 3 in the test); the rest are read.
// offsets:  Admin listShareGroupOffsets (start offset, lag) after 6 of 10 records were accepted;
//           alterShareGroupOffsets back to 2 (the group empty) and the records from 2 come again;
//           deleteShareGroupOffsets forgets the state (the group reads from earliest again);
//           deleteShareGroups removes the empty group.
// victim:   polls records without acknowledging them, prints "ACQUIRED <offsets>" and waits to
//           be killed (the test kills the JVM: SIGKILL).
// after:    the records the killed victim held are delivered again (count 2) once their
//           acquisition locks expire: args <topic> <group> <expected offsets, comma separated>.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareCheck {
    static String bootstrap;

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        System.exit(0);   // consumer threads of a failed scenario must not keep the JVM up
    }

    static void run(String[] args) throws Exception {
        bootstrap = args[0];
        if (args[1].equals("victim")) {
            victim(args[2], args[3]);
            return;
        }
        if (args[1].equals("after")) {
            after(args[2], args[3], args[4]);
            return;
        }
        for (String scenario : args[1].split(",")) {
            String topic = args[2] + "-" + scenario, group = args[2] + "-g-" + scenario;
            switch (scenario) {
                case "share3" -> share3(topic, group);
                case "acks" -> acks(topic, group);
                case "poison" -> poison(topic, group);
                case "offsets" -> offsets(topic, group);
                default -> throw new IllegalArgumentException(scenario);
            }
        }
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return Admin.create(p);
    }

    /** One partition; on a cluster (tests/share/test_share_java_cluster.py) the replicas given by
     *  -Dsharecheck.replicas=3,1,2 (the first leads), so the partition leader is chosen apart from
     *  the group coordinator and the share-state coordinator. */
    static NewTopic newTopic(String topic) {
        String replicas = System.getProperty("sharecheck.replicas");
        if (replicas == null) return new NewTopic(topic, 1, (short) 1);
        List<Integer> ids = new ArrayList<>();
        for (String s : replicas.split(",")) ids.add(Integer.parseInt(s));
        return new NewTopic(topic, Map.of(0, ids));
    }

    /** The topic with n records "v0".."v{n-1}", and the group reading from the earliest offset. */
    static void setup(String topic, String group, int n) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(newTopic(topic))).all().get();
            a.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), List.of(
                    new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                                      AlterConfigOp.OpType.SET)))).all().get();
        }
        produce(topic, 0, n);
    }

    static void produce(String topic, int from, int to) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("linger.ms", "0");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = from; i < to; i++) pr.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
        }
    }

    static KafkaShareConsumer<String, String> consumer(String group, boolean explicit, int maxPoll) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("max.poll.records", String.valueOf(maxPoll));
        if (explicit) p.put("share.acknowledgement.mode", "explicit");
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    // ------------------------------------------------------------------------------ share3
    static void share3(String topic, String group) throws Exception {
        setup(topic, group, 0);
        int n = 60;
        Map<Long, String> owner = new ConcurrentHashMap<>();
        List<String> duplicates = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean stop = new AtomicBoolean(false);
        List<Thread> threads = new ArrayList<>();
        Map<String, Integer> counts = new ConcurrentHashMap<>();
        java.util.concurrent.CountDownLatch joined = new java.util.concurrent.CountDownLatch(3);
        for (int c = 0; c < 3; c++) {
            String name = "c" + c;
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> sc = consumer(group, false, 4)) {
                    sc.subscribe(List.of(topic));
                    boolean counted = false;
                    while (!stop.get()) {
                        ConsumerRecords<String, String> rs = sc.poll(Duration.ofMillis(100));
                        if (!counted) { joined.countDown(); counted = true; }
                        for (ConsumerRecord<String, String> r : rs) {
                            String prev = owner.putIfAbsent(r.offset(), name);
                            if (prev != null) duplicates.add(r.offset() + " to " + prev + " and " + name);
                            counts.merge(name, 1, Integer::sum);
                            Thread.sleep(10);   // some work: the others get their share meanwhile
                        }
                    }
                    sc.commitSync();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        joined.await();
        try (Admin a = admin()) {   // the three share the one partition
            long until = System.currentTimeMillis() + 15000;
            ShareGroupDescription d = null;
            do {
                try {
                    d = a.describeShareGroups(List.of(group)).describedGroups().get(group).get();
                } catch (java.util.concurrent.ExecutionException e) {   // not joined yet
                    d = null;
                    Thread.sleep(100);
                    continue;
                }
                if (d.members().size() == 3 && d.members().stream().allMatch(m -> m.assignment().topicPartitions().size() == 1)) break;
                Thread.sleep(100);
            } while (System.currentTimeMillis() < until);
            check(d != null && d.members().size() == 3, "3 members: " + d);
            for (ShareMemberDescription m : d.members())
                check(m.assignment().topicPartitions().size() == 1, "each member has the partition: " + d);
            check(d.groupState().toString().equalsIgnoreCase("Stable"), "state " + d.groupState());
            boolean listed = false;
            for (GroupListing g : a.listGroups().all().get())
                if (g.groupId().equals(group)) listed = g.type().map(ty -> ty.toString().equalsIgnoreCase("share")).orElse(false);
            check(listed, "listGroups shows a share group");
        }
        produce(topic, 0, n);
        long until = System.currentTimeMillis() + 20000;
        while (owner.size() < n && System.currentTimeMillis() < until) Thread.sleep(50);
        stop.set(true);
        for (Thread t : threads) t.join(20000);
        check(duplicates.isEmpty(), "delivered twice: " + duplicates);
        check(owner.size() == n, "all " + n + " delivered: " + owner.size());
        System.out.println("OK share3 " + new TreeSet<>(counts.entrySet().stream().map(Object::toString).toList()));
    }

    // ------------------------------------------------------------------------------ acks
    static void acks(String topic, String group) throws Exception {
        setup(topic, group, 3);
        try (KafkaShareConsumer<String, String> sc = consumer(group, true, 10)) {
            sc.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollAtLeast(sc, 3, 15000);
            check(got.size() == 3, "3 records: " + got.size());
            for (ConsumerRecord<String, String> r : got) check(r.deliveryCount().get() == 1, "first delivery " + r);
            sc.acknowledge(got.get(0), AcknowledgeType.ACCEPT);
            sc.acknowledge(got.get(1), AcknowledgeType.RELEASE);
            sc.acknowledge(got.get(2), AcknowledgeType.REJECT);
            Map<?, ?> res = sc.commitSync();
            for (Object e : res.values()) check(((java.util.Optional<?>) e).isEmpty(), "commit " + res);
            List<ConsumerRecord<String, String>> again = pollAtLeast(sc, 1, 15000);
            check(again.size() == 1 && again.get(0).offset() == 1 && again.get(0).deliveryCount().get() == 2,
                  "the released record again, second delivery: " + again);
            sc.acknowledge(again.get(0), AcknowledgeType.ACCEPT);
            sc.commitSync();
            List<ConsumerRecord<String, String>> none = pollAtLeast(sc, 1, 1500);
            check(none.isEmpty(), "nothing more (the rejected record is archived): " + none);
        }
        System.out.println("OK acks");
    }

    static List<ConsumerRecord<String, String>> pollAtLeast(KafkaShareConsumer<String, String> sc, int n, long ms) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long until = System.currentTimeMillis() + ms;
        while (out.size() < n && System.currentTimeMillis() < until)
            for (ConsumerRecord<String, String> r : sc.poll(Duration.ofMillis(200))) out.add(r);
        return out;
    }

    // ------------------------------------------------------------------------------ poison
    static void poison(String topic, String group) throws Exception {
        setup(topic, group, 4);   // v0 is the poison record
        int deliveries = 0;
        Set<Long> accepted = new TreeSet<>();
        try (KafkaShareConsumer<String, String> sc = consumer(group, true, 10)) {
            sc.subscribe(List.of(topic));
            long until = System.currentTimeMillis() + 20000;
            while (accepted.size() < 3 && System.currentTimeMillis() < until || System.currentTimeMillis() < until
                   && deliveries < 3) {
                for (ConsumerRecord<String, String> r : sc.poll(Duration.ofMillis(200))) {
                    if (r.value().equals("v0")) {
                        deliveries++;
                        check(r.deliveryCount().get() == deliveries, "delivery count " + r.deliveryCount());
                        sc.acknowledge(r, AcknowledgeType.RELEASE);
                    } else {
                        accepted.add(r.offset());
                        sc.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                sc.commitSync();
            }
            List<ConsumerRecord<String, String>> none = pollAtLeast(sc, 1, 1500);
            check(none.isEmpty(), "the poison record is archived: " + none);
        }
        check(deliveries == 3, "delivered 3 times (the limit): " + deliveries);
        check(accepted.equals(Set.of(1L, 2L, 3L)), "the others read: " + accepted);
        System.out.println("OK poison " + deliveries);
    }

    // ------------------------------------------------------------------------------ offsets
    static SharePartitionOffsetInfo offsetOf(Admin a, String group, String topic) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> m = a.listShareGroupOffsets(
                Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group).get();
        return m.get(new TopicPartition(topic, 0));
    }

    static List<Long> readAccepting(String topic, String group, int n) {
        List<Long> got = new ArrayList<>();
        try (KafkaShareConsumer<String, String> sc = consumer(group, true, n)) {
            sc.subscribe(List.of(topic));
            long until = System.currentTimeMillis() + 15000;
            while (got.size() < n && System.currentTimeMillis() < until) {
                for (ConsumerRecord<String, String> r : sc.poll(Duration.ofMillis(200))) {
                    if (got.size() < n) {
                        got.add(r.offset());
                        sc.acknowledge(r, AcknowledgeType.ACCEPT);
                    } else {
                        sc.acknowledge(r, AcknowledgeType.RELEASE);
                    }
                }
                sc.commitSync();
            }
        }
        return got;
    }

    static void waitEmpty(Admin a, String group) throws Exception {
        long until = System.currentTimeMillis() + 15000;
        while (System.currentTimeMillis() < until) {
            if (a.describeShareGroups(List.of(group)).describedGroups().get(group).get().members().isEmpty()) return;
            Thread.sleep(100);
        }
        throw new AssertionError("the group did not empty");
    }

    static void offsets(String topic, String group) throws Exception {
        setup(topic, group, 10);
        List<Long> first = readAccepting(topic, group, 6);
        check(first.equals(List.of(0L, 1L, 2L, 3L, 4L, 5L)), "first read " + first);
        try (Admin a = admin()) {
            waitEmpty(a, group);
            SharePartitionOffsetInfo info = offsetOf(a, group, topic);
            check(info != null && info.startOffset() == 6, "start offset 6: " + info);
            check(info.lag().isPresent() && info.lag().get() == 4, "lag 4: " + info);
            a.alterShareGroupOffsets(group, Map.of(new TopicPartition(topic, 0), 2L)).all().get();
            check(offsetOf(a, group, topic).startOffset() == 2, "altered to 2");
        }
        List<Long> again = readAccepting(topic, group, 8);
        check(again.equals(List.of(2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L)), "from 2 again: " + again);
        try (Admin a = admin()) {
            waitEmpty(a, group);
            a.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
            SharePartitionOffsetInfo gone = offsetOf(a, group, topic);
            check(gone == null || gone.startOffset() == -1, "deleted: " + gone);
        }
        List<Long> third = readAccepting(topic, group, 3);
        check(third.equals(List.of(0L, 1L, 2L)), "from earliest after the delete: " + third);
        try (Admin a = admin()) {   // deleteShareGroups (DeleteGroups) once it is empty
            waitEmpty(a, group);
            a.deleteShareGroups(List.of(group)).all().get();
            try {
                a.describeShareGroups(List.of(group)).describedGroups().get(group).get();
                throw new AssertionError("the deleted group is still described");
            } catch (java.util.concurrent.ExecutionException expected) {
                check(expected.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException,
                      "deleted: " + expected.getCause());
            }
        }
        System.out.println("OK offsets");
    }

    // ------------------------------------------------------------------------------ crash
    static void victim(String topic, String group) throws Exception {
        setup(topic, group, 5);
        KafkaShareConsumer<String, String> sc = consumer(group, true, 3);
        sc.subscribe(List.of(topic));
        List<ConsumerRecord<String, String>> got = pollAtLeast(sc, 1, 15000);
        List<String> offs = new ArrayList<>();
        for (ConsumerRecord<String, String> r : got) offs.add(String.valueOf(r.offset()));
        System.out.println("ACQUIRED " + String.join(",", offs));
        System.out.flush();
        Thread.sleep(120000);   // killed before this ends
    }

    static void after(String topic, String group, String expected) throws Exception {
        Set<Long> want = new TreeSet<>();
        for (String s : expected.split(",")) want.add(Long.parseLong(s));
        Map<Long, Short> seen = new HashMap<>();
        try (KafkaShareConsumer<String, String> sc = consumer(group, false, 10)) {
            sc.subscribe(List.of(topic));
            long until = System.currentTimeMillis() + 20000;
            while (seen.size() < 5 && System.currentTimeMillis() < until)
                for (ConsumerRecord<String, String> r : sc.poll(Duration.ofMillis(200)))
                    seen.putIfAbsent(r.offset(), r.deliveryCount().get());
            sc.commitSync();
        }
        check(seen.size() == 5, "all 5 records: " + seen);
        // (the victim's client may have fetched more before it died: those come back with 2 too)
        for (long off : want) check(seen.get(off) == 2, "delivery counts " + seen + " victim had " + want);
        System.out.println("OK after " + seen);
    }
}
