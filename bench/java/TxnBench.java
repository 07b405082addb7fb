// The transactions benchmark's loops on the Java client (kafka-clients 4.x), run by
// bench/transactions_java.py: one JVM per measurement, a warm-up round first (JIT, connections,
// coordinator), then the timed round. Prints one line: "<records/s> <transaction.version used>".
//
//   java -cp <kafka-clients and slf4j jars>:<dir> TxnBench <bootstrap> <topic> txn|idem <K> <N> [tid]
//
// txn: beginTransaction, K x send, commitTransaction (which flushes, then EndTxn);
// idem: enable.idempotence, K x send, flush(). acks=all, linger.ms=5, 100 B records, partition 0,
// as bench/transactions_bench.py sets librdkafka.
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnBench {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], mode = args[2];
        int k = Integer.parseInt(args[3]), n = Integer.parseInt(args[4]);
        boolean txn = mode.equals("txn");
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("linger.ms", System.getProperty("linger.ms", "5"));
        p.put("batch.size", "1000000");
        p.put("buffer.memory", "268435456");
        p.put("compression.type", "none");
        p.put("enable.idempotence", "true");
        if (txn) p.put("transactional.id", args.length > 5 ? args[5] : "java-bench-" + System.nanoTime());
        byte[] value = new byte[100];
        java.util.Arrays.fill(value, (byte) 'x');
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (txn) producer.initTransactions();
            for (int round = 0; round < 2; round++) {
                int records = n;   // the warm-up round as long as the timed one (JIT)
                long t0 = System.nanoTime();
                for (int done = 0; done < records; done += k) {
                    if (txn) producer.beginTransaction();
                    for (int i = 0; i < k; i++) {
                        producer.send(new ProducerRecord<>(topic, 0, null, value), (md, e) -> {
                            if (e != null) failed.compareAndSet(null, e);
                        });
                    }
                    if (txn) producer.commitTransaction(); else producer.flush();
                }
                double dt = (System.nanoTime() - t0) / 1e9;
                if (failed.get() != null) throw failed.get();
                if (round == 1) {
                    System.out.printf("%.1f %s%n", records / dt, transactionVersion(producer));
                }
            }
        }
    }

    /** The transaction version the producer's TransactionManager chose (2: KIP-890 part 2). */
    static String transactionVersion(KafkaProducer<?, ?> producer) {
        try {
            java.lang.reflect.Field f = KafkaProducer.class.getDeclaredField("transactionManager");
            f.setAccessible(true);
            Object tm = f.get(producer);
            if (tm == null) return "-";
            java.lang.reflect.Method m = tm.getClass().getMethod("isTransactionV2Enabled");
            return ((Boolean) m.invoke(tm)) ? "2" : "1";
        } catch (ReflectiveOperationException e) {
            return "?";
        }
    }
}
