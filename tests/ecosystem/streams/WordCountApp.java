// A Kafka Streams 4.3 application for tests/ecosystem/test_kafka_streams.py: run as two instances
// (two JVMs, one application.id) against kwire and against Apache Kafka, whose outputs are compared.
//
//   lines (key: line id, value: "w1 w2 ...")  --flatMap/selectKey-->  words keyed by word
//     words --groupByKey.count-->                                   "word-counts"   (word -> running count)
//     words --join KTable(categories)--> category --groupBy(category)
//           --1-minute tumbling windows on the record timestamps.count--> "category-counts"
//                                                                    ("category@windowStart" -> running count)
//
// exactly_once_v2, one standby replica, the record cache off (every update reaches the output, so
// a lost or replayed update shows as a gap or a repeat in a key's sequence 1, 2, 3, ...).
// Args: bootstrap-servers application-id state-dir
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

public class WordCountApp {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // a SIGKILLed instance leaves the group after 10 s, not the default 45 s
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> words = b.stream("lines", Consumed.with(Serdes.String(), Serdes.String()))
                .flatMap((k, line) -> Arrays.stream(line.split(" ")).filter(w -> !w.isEmpty())
                        .map(w -> KeyValue.pair(w, w)).toList());
        KTable<String, String> categories = b.table("categories", Consumed.with(Serdes.String(), Serdes.String()));

        words.groupByKey(Grouped.as("by-word")).count()
                .toStream().to("word-counts", Produced.with(Serdes.String(), Serdes.Long()));

        words.join(categories, (word, category) -> category)
                .groupBy((word, category) -> category, Grouped.as("by-category"))
                // a day's grace: records reach the category tasks from several upstream tasks out of
                // timestamp order, and none may be dropped as late (the output must be deterministic)
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofDays(1)))
                .count()
                .toStream((wk, n) -> wk.key() + "@" + wk.window().start())
                .to("category-counts", Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) done.countDown();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            done.countDown();
        }));
        streams.start();
        done.await();
    }
}
