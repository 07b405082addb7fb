// The transactions benchmark's K-record loops on the Java client (kafka-clients 4.x), paired in
// time: one JVM holds four producers (transactional and idempotent, each at linger.ms 5 and 0),
// warms each up, then runs short blocks of each in turn, round after round, and adds up each
// producer's time. A load that comes and goes on a shared machine then falls on all four alike,
// where one JVM per loop (TxnBench.java) measures each at a different moment.
//
//   java -cp <kafka-clients and slf4j jars>:<dir> TxnPairBench <bootstrap> <topic prefix> <K> <blocks> <per block> [record bytes]
//
// Topics <prefix>-txn-5, <prefix>-txn-0, <prefix>-idem-5, <prefix>-idem-0 (one partition each)
// must exist. Each block is <per block> iterations of: txn: beginTransaction, K x send,
// commitTransaction; idem: K x send, flush(). acks=all, 100 B records (or [record bytes]), partition 0, as
// TxnBench.java. Prints one line per producer: "<name> <records/s> <transaction version used>",
// then "blocks <ratio of each block pair: best txn / best idem>..." for the spread; before them a
// line "block <n> <ms of each producer, in NAMES order>" per block.
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnPairBench {
    static final String[] NAMES = {"txn-5", "txn-0", "idem-5", "idem-0"};

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], prefix = args[1];
        int k = Integer.parseInt(args[2]), blocks = Integer.parseInt(args[3]), perBlock = Integer.parseInt(args[4]);
        byte[] value = new byte[args.length > 5 ? Integer.parseInt(args[5]) : 100];
        java.util.Arrays.fill(value, (byte) 'x');
        AtomicReference<Exception> failed = new AtomicReference<>();
        List<KafkaProducer<byte[], byte[]>> producers = new ArrayList<>();
        try {
            for (String name : NAMES) {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("acks", "all");
                p.put("linger.ms", name.endsWith("-5") ? "5" : "0");
                p.put("batch.size", "1000000");
                p.put("buffer.memory", "268435456");
                p.put("compression.type", "none");
                p.put("enable.idempotence", "true");
                if (name.startsWith("txn")) p.put("transactional.id", "java-pair-" + name + "-" + System.nanoTime());
                KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
                if (name.startsWith("txn")) producer.initTransactions();
                producers.add(producer);
            }
            long[] nanos = new long[NAMES.length];
            double[] blockRatios = new double[blocks];
            for (int b = -2; b < blocks; b++) {   // two warm-up blocks (JIT, connections, coordinator)
                long[] these = new long[NAMES.length];
                for (int j = 0; j < NAMES.length; j++) {
                    int i = (b & 1) == 0 ? j : NAMES.length - 1 - j;   // alternate the order
                    these[i] = block(producers.get(i), prefix + "-" + NAMES[i], NAMES[i].startsWith("txn"), k, perBlock, value, failed);
                }
                if (failed.get() != null) throw failed.get();
                if (b < 0) continue;
                for (int i = 0; i < NAMES.length; i++) nanos[i] += these[i];
                System.out.printf("block %d %.3f %.3f %.3f %.3f%n", b, these[0] / 1e6, these[1] / 1e6, these[2] / 1e6,
                                  these[3] / 1e6);
                blockRatios[b] = (double) Math.min(these[2], these[3]) / Math.min(these[0], these[1]);
            }
            double records = (double) blocks * perBlock * k;
            for (int i = 0; i < NAMES.length; i++) {
                System.out.printf("%s %.1f %s%n", NAMES[i], records / (nanos[i] / 1e9),
                                  TxnBench.transactionVersion(producers.get(i)));
            }
            StringBuilder sb = new StringBuilder("blocks");
            for (double r : blockRatios) sb.append(String.format(" %.3f", r));
            System.out.println(sb);
        } finally {
            for (KafkaProducer<byte[], byte[]> producer : producers) producer.close();
        }
    }

    static long block(KafkaProducer<byte[], byte[]> producer, String topic, boolean txn, int k, int iterations,
                      byte[] value, AtomicReference<Exception> failed) {
        long t0 = System.nanoTime();
        for (int it = 0; it < iterations; it++) {
            if (txn) producer.beginTransaction();
            for (int i = 0; i < k; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, value), (md, e) -> {
                    if (e != null) failed.compareAndSet(null, e);
                });
            }
            if (txn) producer.commitTransaction(); else producer.flush();
        }
        return System.nanoTime() - t0;
    }
}
