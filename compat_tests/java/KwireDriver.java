// The compat suite's driver for the Apache Kafka Java client (kafka-clients): one long-lived JVM per test
// session that runs producer, consumer and AdminClient operations on request.
//
// Protocol: one JSON object per line. Requests on stdin: {"id": N, "op": "...", ...arguments}; answers on
// stdout, in completion order: {"id": N, "result": ...} or {"id": N, "error": "KAFKA_ERROR_NAME", "detail": "..."}.
// Each request runs on its own thread, so a group member blocked in a rebalance never holds up another
// member. Bytes (keys, values, header values) travel as base64 strings, null as null. Errors carry Kafka's
// error-code name (Errors.forException on the ApiException the client raised), or the exception's simple
// class name for client-side failures that have no Kafka error code. The JVM exits when stdin closes.
// Compiled by compat_tests/clients/java.py with javac against the kafka-clients jar; no JSON library:
// the small reader and writer in Json.java are enough for this protocol.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

@SuppressWarnings("unchecked")
public final class KwireDriver {
    private static PrintStream out;
    private static final Map<Long, AutoCloseable> HANDLES = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_HANDLE = new AtomicLong(1);
    private static final Map<String, Admin> ADMINS = new ConcurrentHashMap<>();
    private static final Base64.Encoder B64E = Base64.getEncoder();
    private static final Base64.Decoder B64D = Base64.getDecoder();

    public static void main(String[] args) throws Exception {
        // the protocol owns the real stdout; anything the client libraries print goes to stderr (a log file)
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "kwire-driver-op");
            t.setDaemon(true);
            return t;
        });
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("id", 0L);
        hello.put("result", versions());
        send(hello);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> req = (Map<String, Object>) Json.parse(line);
            pool.execute(() -> handle(req));
        }
        // the suite closed our stdin (or died): nothing is waiting for answers any more
        Runtime.getRuntime().halt(0);
    }

    private static Map<String, Object> versions() {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("kafka_clients", AppInfoParser.getVersion());
        v.put("java", System.getProperty("java.runtime.version"));
        v.put("vm", System.getProperty("java.vm.name"));
        return v;
    }

    private static void send(Map<String, Object> msg) {
        String text = Json.write(msg);
        synchronized (out) {
            out.println(text);
            out.flush();
        }
    }

    private static void handle(Map<String, Object> req) {
        Map<String, Object> resp = new LinkedHashMap<>();
        resp.put("id", req.get("id"));
        try {
            resp.put("result", dispatch((String) req.get("op"), req));
        } catch (Throwable t) {
            Throwable c = unwrap(t);
            resp.put("error", errorName(c));
            resp.put("detail", c.getClass().getName() + ": " + c.getMessage());
        }
        send(resp);
    }

    static Throwable unwrap(Throwable t) {
        while (t.getCause() != null && (t instanceof ExecutionException || t instanceof CompletionException
                || t.getClass() == KafkaException.class)) {
            t = t.getCause();
        }
        return t;
    }

    static String errorName(Throwable t) {
        if (t instanceof ApiException) {
            Errors e = Errors.forException(t);
            if (e != Errors.UNKNOWN_SERVER_ERROR || t instanceof UnknownServerException) return e.name();
        }
        return t.getClass().getSimpleName();
    }

    private static Object dispatch(String op, Map<String, Object> a) throws Exception {
        switch (op) {
            case "versions": return versions();
            case "produce": return produce(a);
            case "produce_transactional": return produceTransactional(a);
            case "consumer_open": return consumerOpen(a);
            case "consumer_read": return consumerRead(a);
            case "offset_for_time": return offsetForTime(a);
            case "watermarks": return watermarks(a);
            case "member_open": return memberOpen(a);
            case "member_poll": return memberPoll(a);
            case "member_commit": return memberCommit(a);
            case "member_committed": return memberCommitted(a);
            case "close": return close(a);
            case "create_topic": return createTopic(a);
            case "delete_topic": return deleteTopic(a);
            case "list_topics": return listTopics(a);
            case "partition_count": return partitionCount(a);
            case "create_partitions": return createPartitions(a);
            case "describe_configs": return describeConfigs(a);
            case "alter_configs": return alterConfigs(a);
            case "delete_records": return deleteRecords(a);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ------------------------------------------------------------------ arguments
    private static String str(Map<String, Object> a, String k) { return (String) a.get(k); }
    private static long num(Map<String, Object> a, String k) { return ((Number) a.get(k)).longValue(); }
    private static long num(Map<String, Object> a, String k, long dflt) {
        Object v = a.get(k);
        return v == null ? dflt : ((Number) v).longValue();
    }
    private static byte[] bytes(Object v) { return v == null ? null : B64D.decode((String) v); }
    private static String b64(byte[] v) { return v == null ? null : B64E.encodeToString(v); }
    private static <T extends AutoCloseable> T handleOf(Map<String, Object> a) {
        AutoCloseable h = HANDLES.get(num(a, "h"));
        if (h == null) throw new IllegalArgumentException("no handle " + a.get("h"));
        return (T) h;
    }
    private static long register(AutoCloseable c) {
        long h = NEXT_HANDLE.getAndIncrement();
        HANDLES.put(h, c);
        return h;
    }
    private static void putAll(Properties p, Object extra) {
        if (extra != null) ((Map<String, Object>) extra).forEach((k, v) -> p.put(k, String.valueOf(v)));
    }

    // ------------------------------------------------------------------ producing
    private static KafkaProducer<byte[], byte[]> producer(Map<String, Object> a, long timeoutMs) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, str(a, "bootstrap"));
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeoutMs));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs + 10));
        putAll(p, a.get("conf"));
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, Map<String, Object> r, Integer defaultPartition) {
        List<Header> headers = new ArrayList<>();
        for (Object h : (List<Object>) r.getOrDefault("h", List.of())) {
            List<Object> kv = (List<Object>) h;
            headers.add(new RecordHeader((String) kv.get(0), bytes(kv.get(1))));
        }
        Object p = r.get("p");
        Integer partition = p == null ? defaultPartition : Integer.valueOf(((Number) p).intValue());
        Object ts = r.get("ts");
        Long timestamp = ts == null ? null : ((Number) ts).longValue();
        return new ProducerRecord<>(topic, partition, timestamp, bytes(r.get("k")), bytes(r.get("v")), headers);
    }

    private static Object produce(Map<String, Object> a) throws Exception {
        long timeoutMs = num(a, "timeout_ms");
        String topic = str(a, "topic");
        List<Object> acked = new ArrayList<>();
        KafkaProducer<byte[], byte[]> p = producer(a, timeoutMs);
        boolean ok = false;
        try {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (Object r : (List<Object>) a.get("records")) {
                futures.add(p.send(record(topic, (Map<String, Object>) r, null)));
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata md = f.get(timeoutMs + 5000, TimeUnit.MILLISECONDS);
                acked.add(List.of((long) md.partition(), md.hasOffset() ? md.offset() : -1L));
            }
            ok = true;
        } finally {
            p.close(ok ? Duration.ofSeconds(5) : Duration.ZERO);
        }
        return acked;
    }

    private static Object produceTransactional(Map<String, Object> a) {
        long timeoutMs = num(a, "timeout_ms");
        String topic = str(a, "topic");
        KafkaProducer<byte[], byte[]> p = producer(a, timeoutMs);
        boolean ok = false;
        try {
            p.initTransactions();
            for (String which : new String[] {"aborted", "committed"}) {
                p.beginTransaction();
                for (Object r : (List<Object>) a.get(which)) {
                    p.send(record(topic, (Map<String, Object>) r, 0));
                }
                p.flush();
                if (which.equals("committed")) p.commitTransaction();
                else p.abortTransaction();
            }
            ok = true;
        } finally {
            p.close(ok ? Duration.ofSeconds(5) : Duration.ZERO);
        }
        return null;
    }

    // ------------------------------------------------------------------ consuming without a group
    private static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> a, Properties extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, str(a, "bootstrap"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        p.putAll(extra);
        putAll(p, a.get("conf"));
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static List<TopicPartition> tps(Map<String, Object> a) {
        List<TopicPartition> out = new ArrayList<>();
        for (Object p : (List<Object>) a.get("partitions")) out.add(new TopicPartition(str(a, "topic"), ((Number) p).intValue()));
        return out;
    }

    private static Object consumerOpen(Map<String, Object> a) {
        KafkaConsumer<byte[], byte[]> c = consumer(a, new Properties());
        try {
            List<TopicPartition> tps = tps(a);
            c.assign(tps);
            Object start = a.get("start");
            if ("beginning".equals(start)) {
                c.seekToBeginning(tps);
            } else if ("end".equals(start)) {
                c.seekToEnd(tps);
            } else if (start instanceof Number) {
                for (TopicPartition tp : tps) c.seek(tp, ((Number) start).longValue());
            } else {
                long ts = num((Map<String, Object>) start, "timestamp");
                Map<TopicPartition, Long> query = new HashMap<>();
                for (TopicPartition tp : tps) query.put(tp, ts);
                Map<TopicPartition, OffsetAndTimestamp> found = c.offsetsForTimes(query);
                for (TopicPartition tp : tps) {
                    OffsetAndTimestamp o = found.get(tp);
                    if (o == null) c.seekToEnd(List.of(tp));
                    else c.seek(tp, o.offset());
                }
            }
            Map<String, Object> positions = new LinkedHashMap<>();
            for (TopicPartition tp : tps) positions.put(String.valueOf(tp.partition()), c.position(tp));  // resolves resets now
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("h", register(c));
            r.put("positions", positions);
            return r;
        } catch (RuntimeException e) {
            c.close(CloseOptions.timeout(Duration.ZERO));
            throw e;
        }
    }

    private static Map<String, Object> got(ConsumerRecord<byte[], byte[]> r) {
        Map<String, Object> g = new LinkedHashMap<>();
        g.put("t", r.topic());
        g.put("p", (long) r.partition());
        g.put("o", r.offset());
        g.put("k", b64(r.key()));
        g.put("v", b64(r.value()));
        List<Object> hs = new ArrayList<>();
        for (Header h : r.headers()) {
            List<Object> kv = new ArrayList<>();
            kv.add(h.key());
            kv.add(b64(h.value()));
            hs.add(kv);
        }
        g.put("h", hs);
        g.put("ts", r.timestamp());
        g.put("tt", r.timestampType() == TimestampType.LOG_APPEND_TIME ? "LogAppendTime" : "CreateTime");
        return g;
    }

    private static Object consumerRead(Map<String, Object> a) {
        KafkaConsumer<byte[], byte[]> c = handleOf(a);
        long count = num(a, "count");
        long deadline = System.nanoTime() + num(a, "timeout_ms") * 1_000_000L;
        List<Object> out = new ArrayList<>();
        while (out.size() < count) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) break;
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(Math.min(left, 200)))) out.add(got(r));
        }
        return out;
    }

    private static Object offsetForTime(Map<String, Object> a) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(a, new Properties())) {
            TopicPartition tp = new TopicPartition(str(a, "topic"), (int) num(a, "partition"));
            OffsetAndTimestamp o = c.offsetsForTimes(Map.of(tp, num(a, "ts")), Duration.ofSeconds(10)).get(tp);
            return o == null ? null : o.offset();
        }
    }

    private static Object watermarks(Map<String, Object> a) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(a, new Properties())) {
            TopicPartition tp = new TopicPartition(str(a, "topic"), (int) num(a, "partition"));
            long low = c.beginningOffsets(List.of(tp), Duration.ofSeconds(10)).get(tp);
            long high = c.endOffsets(List.of(tp), Duration.ofSeconds(10)).get(tp);
            return List.of(low, high);
        }
    }

    // ------------------------------------------------------------------ group members
    private static Object memberOpen(Map<String, Object> a) {
        Properties p = new Properties();
        p.put(ConsumerConfig.GROUP_ID_CONFIG, str(a, "group"));
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        KafkaConsumer<byte[], byte[]> c = consumer(a, p);
        c.subscribe((List<String>) (List<?>) a.get("topics"));
        return register(c);
    }

    private static List<Object> assignment(KafkaConsumer<byte[], byte[]> c) {
        List<Object> out = new ArrayList<>();
        for (TopicPartition tp : c.assignment()) out.add(List.of(tp.topic(), (long) tp.partition()));
        return out;
    }

    private static Object memberPoll(Map<String, Object> a) {
        KafkaConsumer<byte[], byte[]> c = handleOf(a);
        List<Object> recs = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(num(a, "timeout_ms")))) recs.add(got(r));
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("records", recs);
        res.put("assignment", assignment(c));  // read on the polling thread: KafkaConsumer is single-threaded
        return res;
    }

    private static Object memberCommit(Map<String, Object> a) {
        KafkaConsumer<byte[], byte[]> c = handleOf(a);
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (Object o : (List<Object>) a.get("offsets")) {
            List<Object> tpo = (List<Object>) o;
            offsets.put(new TopicPartition((String) tpo.get(0), ((Number) tpo.get(1)).intValue()),
                    new OffsetAndMetadata(((Number) tpo.get(2)).longValue()));
        }
        c.commitSync(offsets, Duration.ofSeconds(15));
        return null;
    }

    private static Object memberCommitted(Map<String, Object> a) {
        KafkaConsumer<byte[], byte[]> c = handleOf(a);
        TopicPartition tp = new TopicPartition(str(a, "topic"), (int) num(a, "partition"));
        OffsetAndMetadata o = c.committed(Set.of(tp), Duration.ofSeconds(10)).get(tp);
        return o == null ? null : o.offset();
    }

    private static Object close(Map<String, Object> a) throws Exception {
        AutoCloseable c = HANDLES.remove(num(a, "h"));
        if (c instanceof KafkaConsumer) ((KafkaConsumer<?, ?>) c).close(CloseOptions.timeout(Duration.ofSeconds(10)));  // a member leaves its group
        else if (c != null) c.close();
        return null;
    }

    // ------------------------------------------------------------------ admin
    private static Admin admin(Map<String, Object> a) {
        return ADMINS.computeIfAbsent(str(a, "bootstrap"), b -> {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, b);
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            return Admin.create(p);
        });
    }

    private static final long ADMIN_WAIT_S = 20;

    private static Object createTopic(Map<String, Object> a) throws Exception {
        NewTopic t = new NewTopic(str(a, "topic"), (int) num(a, "partitions"), (short) 1);
        Map<String, String> cfg = new HashMap<>();
        ((Map<String, Object>) a.getOrDefault("configs", Map.of())).forEach((k, v) -> cfg.put(k, String.valueOf(v)));
        t.configs(cfg);
        admin(a).createTopics(List.of(t)).all().get(ADMIN_WAIT_S, TimeUnit.SECONDS);
        return null;
    }

    private static Object deleteTopic(Map<String, Object> a) throws Exception {
        admin(a).deleteTopics(List.of(str(a, "topic"))).all().get(ADMIN_WAIT_S, TimeUnit.SECONDS);
        return null;
    }

    private static Object listTopics(Map<String, Object> a) throws Exception {
        return new ArrayList<Object>(admin(a).listTopics().names().get(ADMIN_WAIT_S, TimeUnit.SECONDS));
    }

    private static Object partitionCount(Map<String, Object> a) throws Exception {
        String topic = str(a, "topic");
        return (long) admin(a).describeTopics(List.of(topic)).allTopicNames().get(ADMIN_WAIT_S, TimeUnit.SECONDS)
                .get(topic).partitions().size();
    }

    private static Object createPartitions(Map<String, Object> a) throws Exception {
        admin(a).createPartitions(Map.of(str(a, "topic"), NewPartitions.increaseTo((int) num(a, "total"))))
                .all().get(ADMIN_WAIT_S, TimeUnit.SECONDS);
        return null;
    }

    private static Object describeConfigs(Map<String, Object> a) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, str(a, "topic"));
        Config cfg = admin(a).describeConfigs(List.of(res)).all().get(ADMIN_WAIT_S, TimeUnit.SECONDS).get(res);
        Map<String, Object> out = new LinkedHashMap<>();
        for (ConfigEntry e : cfg.entries()) out.put(e.name(), e.value());
        return out;
    }

    private static Object alterConfigs(Map<String, Object> a) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, str(a, "topic"));
        List<AlterConfigOp> ops = new ArrayList<>();
        ((Map<String, Object>) a.get("configs")).forEach((k, v) ->
                ops.add(new AlterConfigOp(new ConfigEntry(k, String.valueOf(v)), AlterConfigOp.OpType.SET)));
        admin(a).incrementalAlterConfigs(Map.of(res, ops)).all().get(ADMIN_WAIT_S, TimeUnit.SECONDS);
        return null;
    }

    private static Object deleteRecords(Map<String, Object> a) throws Exception {
        TopicPartition tp = new TopicPartition(str(a, "topic"), (int) num(a, "partition"));
        return admin(a).deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(num(a, "before"))))
                .lowWatermarks().get(tp).get(ADMIN_WAIT_S, TimeUnit.SECONDS).lowWatermark();
    }
}
