// Command kafkago_driver runs one client operation with segmentio/kafka-go 0.2 (Debian's
// golang-github-segmentio-kafka-go-dev: "kafka-go before 0.4", which sends fixed protocol
// versions and never asks ApiVersions: Metadata v1, Produce v2 with message format v1, Fetch v2,
// ListOffsets v1, FindCoordinator v0, JoinGroup v1, SyncGroup/Heartbeat/LeaveGroup v0,
// OffsetCommit v2, OffsetFetch v1) against a Kafka bootstrap address, and prints one JSON object
// on stdout: {"offsets": [...], "values": [...]}, or {"error": "..."} with exit status 1.
//
// Our own code for kwire's compatibility tests (compat_tests/test_kafka_go.py builds it with
// `go build` in GOPATH mode; nothing is downloaded).
//
//	-op produce   write -n records (values "<prefix><i>") with a Writer (the topic has one partition)
//	-op consume   read -n records of partition 0 from the first offset with a Reader
//	-op group     a Reader in consumer group -group: read -n records from the group's committed
//	              offset (the first when none), each committed as it is read, then leave
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

type result struct {
	Offsets []int64  `json:"offsets"`
	Values  []string `json:"values"`
}

func fail(format string, args ...interface{}) {
	out, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	fmt.Println(string(out))
	os.Exit(1)
}

func main() {
	op := flag.String("op", "", "produce | consume | group")
	brokers := flag.String("brokers", "", "bootstrap address(es), comma-separated")
	topic := flag.String("topic", "", "topic")
	group := flag.String("group", "", "consumer group (group)")
	n := flag.Int("n", 1, "records to produce or read")
	prefix := flag.String("prefix", "v", "produce: value prefix")
	compression := flag.String("compression", "none", "none | gzip | snappy | lz4")
	timeout := flag.Duration("timeout", 15*time.Second, "give up after this long")
	flag.Parse()
	if *brokers == "" || *topic == "" {
		fail("-brokers and -topic are required")
	}
	time.AfterFunc(*timeout+10*time.Second, func() { fail("%s: still running after %v", *op, *timeout+10*time.Second) })
	addrs := strings.Split(*brokers, ",")
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res := result{Offsets: []int64{}, Values: []string{}}
	var err error
	switch *op {
	case "produce":
		err = produce(ctx, addrs, *topic, *n, *prefix, *compression, *timeout)
	case "consume":
		err = consume(ctx, kafka.ReaderConfig{Brokers: addrs, Topic: *topic, Partition: 0, MaxWait: 100 * time.Millisecond}, *n, &res)
	case "group":
		err = consume(ctx, kafka.ReaderConfig{Brokers: addrs, Topic: *topic, GroupID: *group, MaxWait: 100 * time.Millisecond,
			HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 2 * time.Second}, *n, &res)
	default:
		fail("unknown -op %q", *op)
	}
	if err != nil {
		fail("%s: %v (read %d)", *op, err, len(res.Offsets))
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func produce(ctx context.Context, addrs []string, topic string, n int, prefix, compression string, timeout time.Duration) error {
	conf := kafka.WriterConfig{Brokers: addrs, Topic: topic, MaxAttempts: 2, BatchSize: n,
		BatchTimeout: 50 * time.Millisecond, ReadTimeout: timeout, WriteTimeout: timeout, RequiredAcks: -1}
	switch compression {
	case "", "none":
	case "gzip":
		conf.CompressionCodec = gzip.NewCompressionCodec()
	case "snappy":
		conf.CompressionCodec = snappy.NewCompressionCodec()
	case "lz4":
		conf.CompressionCodec = lz4.NewCompressionCodec()
	default:
		return fmt.Errorf("unknown compression %q", compression)
	}
	w := kafka.NewWriter(conf)
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte("k"), Value: []byte(fmt.Sprintf("%s%d", prefix, i))}
	}
	return w.WriteMessages(ctx, msgs...)
}

func consume(ctx context.Context, conf kafka.ReaderConfig, n int, res *result) error {
	r := kafka.NewReader(conf)
	defer r.Close()
	if conf.GroupID == "" {
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			return err
		}
	}
	for len(res.Offsets) < n {
		m, err := r.ReadMessage(ctx) // in a group with CommitInterval 0: committed before it returns
		if err != nil {
			return err
		}
		res.Offsets = append(res.Offsets, m.Offset)
		res.Values = append(res.Values, string(m.Value))
	}
	return nil
}
