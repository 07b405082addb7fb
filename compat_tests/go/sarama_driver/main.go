// Command sarama_driver runs one client operation with Sarama (github.com/Shopify/sarama, the
// Debian package golang-github-shopify-sarama-dev: 1.22) against a Kafka bootstrap address and
// prints one JSON object on stdout: {"offsets": [...], "values": [...], "errors": [...]}, or
// {"error": "..."} with exit status 1 when the operation failed.
//
// Our own code for kwire's compatibility tests (compat_tests/test_sarama.py builds it with
// `go build` in GOPATH mode; nothing is downloaded).
//
//	-op produce   send -n records (values "<prefix><i>") to partition 0 with a SyncProducer
//	-op consume   read -n records of partition 0 from -offset (-2: the oldest)
//	-op commit    the pre-0.9 way (sarama's OffsetManager, no group membership): resume partition 0
//	              from the group's committed offset (the oldest when none), read -n records,
//	              mark them and close (OffsetCommit with generation -1)
//	-op group     a ConsumerGroup member (needs -version >= 0.10.2.0): read -n records from the
//	              group's committed offsets (the oldest when none), mark them and leave (the
//	              session's end commits)
//
// -version is Sarama's config.Version ("" keeps Sarama's default, the oldest it knows:
// 0.8.2.0 in 1.22); it alone decides the protocol versions Sarama sends (1.22 never asks the
// broker with ApiVersions).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type result struct {
	Offsets []int64  `json:"offsets"`
	Values  []string `json:"values"`
	Errors  []string `json:"errors"`
	Version string   `json:"version"`
}

func fail(format string, args ...interface{}) {
	out, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	fmt.Println(string(out))
	os.Exit(1)
}

func config(version, compression string, timeout time.Duration) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "kwire-sarama-driver"
	if version != "" {
		v, err := sarama.ParseKafkaVersion(version)
		if err != nil {
			fail("version: %v", err)
		}
		c.Version = v
	}
	c.Net.DialTimeout = timeout
	c.Net.ReadTimeout = timeout
	c.Net.WriteTimeout = timeout
	c.Metadata.Retry.Max = 3
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.Retry.Max = 1
	c.Producer.Retry.Backoff = 200 * time.Millisecond
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Partitioner = sarama.NewManualPartitioner
	switch compression {
	case "", "none":
	case "gzip":
		c.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		c.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		c.Producer.Compression = sarama.CompressionLZ4
	default:
		fail("unknown compression %q", compression)
	}
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	c.Consumer.Offsets.Retry.Max = 1
	c.Consumer.Group.Rebalance.Retry.Max = 1
	c.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Heartbeat.Interval = 1 * time.Second
	return c
}

func main() {
	op := flag.String("op", "", "produce | consume | commit | group")
	brokers := flag.String("brokers", "", "bootstrap address(es), comma-separated")
	topic := flag.String("topic", "", "topic")
	group := flag.String("group", "", "consumer group (commit, group)")
	n := flag.Int("n", 1, "records to produce or read")
	offset := flag.Int64("offset", sarama.OffsetOldest, "consume: first offset")
	prefix := flag.String("prefix", "v", "produce: value prefix")
	version := flag.String("version", "", "Sarama config.Version (empty: Sarama's default)")
	compression := flag.String("compression", "none", "none | gzip | snappy | lz4")
	timeout := flag.Duration("timeout", 15*time.Second, "give up after this long")
	retention := flag.Duration("retention", 0, "Consumer.Offsets.Retention (set: OffsetCommit v2 instead of v1)")
	verbose := flag.Bool("v", false, "Sarama's log on stderr")
	flag.Parse()
	if *verbose {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Ltime|log.Lmicroseconds)
	}
	if *brokers == "" || *topic == "" {
		fail("-brokers and -topic are required")
	}
	conf := config(*version, *compression, *timeout)
	conf.Consumer.Offsets.Retention = *retention
	time.AfterFunc(*timeout+10*time.Second, func() { fail("%s: still running %v after its timeout", *op, *timeout+10*time.Second) })
	addrs := strings.Split(*brokers, ",")
	res := result{Offsets: []int64{}, Values: []string{}, Errors: []string{}, Version: conf.Version.String()}
	var err error
	switch *op {
	case "produce":
		err = produce(addrs, conf, *topic, *n, *prefix, &res)
	case "consume":
		err = consume(addrs, conf, *topic, *offset, *n, *timeout, &res)
	case "commit":
		err = commit(addrs, conf, *group, *topic, *n, *timeout, &res)
	case "group":
		err = groupConsume(addrs, conf, *group, *topic, *n, *timeout, &res)
	default:
		fail("unknown -op %q", *op)
	}
	if err != nil {
		fail("%s: %v (errors seen: %v)", *op, err, res.Errors)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func produce(addrs []string, conf *sarama.Config, topic string, n int, prefix string, res *result) error {
	p, err := sarama.NewSyncProducer(addrs, conf)
	if err != nil {
		return err
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder("k"),
			Value: sarama.StringEncoder(fmt.Sprintf("%s%d", prefix, i)), Timestamp: time.Now()}
	}
	if err := p.SendMessages(msgs); err != nil {
		return err
	}
	for _, m := range msgs {
		res.Offsets = append(res.Offsets, m.Offset)
	}
	return nil
}

// read takes n messages from a partition consumer; an error or the deadline ends it early.
func read(pc sarama.PartitionConsumer, n int, timeout time.Duration, res *result, mark func(*sarama.ConsumerMessage)) error {
	deadline := time.After(timeout)
	for len(res.Offsets) < n {
		select {
		case m := <-pc.Messages():
			res.Offsets = append(res.Offsets, m.Offset)
			res.Values = append(res.Values, string(m.Value))
			if mark != nil {
				mark(m)
			}
		case e := <-pc.Errors(): // Sarama retries; the first error is the answer here
			return e
		case <-deadline:
			return fmt.Errorf("read %d of %d records in %v", len(res.Offsets), n, timeout)
		}
	}
	return nil
}

func consume(addrs []string, conf *sarama.Config, topic string, offset int64, n int, timeout time.Duration, res *result) error {
	c, err := sarama.NewConsumer(addrs, conf)
	if err != nil {
		return err
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, offset)
	if err != nil {
		return err
	}
	defer pc.Close()
	return read(pc, n, timeout, res, nil)
}

func commit(addrs []string, conf *sarama.Config, group, topic string, n int, timeout time.Duration, res *result) error {
	client, err := sarama.NewClient(addrs, conf)
	if err != nil {
		return err
	}
	defer client.Close()
	om, err := sarama.NewOffsetManagerFromClient(group, client)
	if err != nil {
		return err
	}
	pom, err := om.ManagePartition(topic, 0)
	if err != nil {
		om.Close()
		return err
	}
	var errMu sync.Mutex
	done := make(chan struct{})
	go func() {
		for e := range pom.Errors() {
			errMu.Lock()
			res.Errors = append(res.Errors, "commit: "+e.Error())
			errMu.Unlock()
		}
		close(done)
	}()
	next, _ := pom.NextOffset()
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return err
	}
	pc, err := c.ConsumePartition(topic, 0, next)
	if err != nil {
		c.Close()
		return err
	}
	readErr := read(pc, n, timeout, res, func(m *sarama.ConsumerMessage) { pom.MarkOffset(m.Offset+1, "") })
	pc.Close()
	c.Close()
	// the manager's Close flushes the marked offset (Retry.Max+1 tries) and then releases the
	// partition's manager, closing its Errors channel (pom.Close would wait for a commit that
	// never succeeds)
	pom.AsyncClose()
	om.Close()
	<-done
	errMu.Lock()
	defer errMu.Unlock()
	if readErr != nil {
		return readErr
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("the commit failed")
	}
	return nil
}

type handler struct {
	n      int
	mu     sync.Mutex
	res    *result
	enough chan struct{}
	once   sync.Once
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		if len(h.res.Offsets) < h.n {
			h.res.Offsets = append(h.res.Offsets, m.Offset)
			h.res.Values = append(h.res.Values, string(m.Value))
			sess.MarkMessage(m, "")
		}
		full := len(h.res.Offsets) >= h.n
		h.mu.Unlock()
		if full {
			h.once.Do(func() { close(h.enough) })
		}
	}
	return nil
}

func groupConsume(addrs []string, conf *sarama.Config, group, topic string, n int, timeout time.Duration, res *result) error {
	g, err := sarama.NewConsumerGroup(addrs, group, conf)
	if err != nil {
		return err
	}
	h := &handler{n: n, res: res, enough: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var errMu sync.Mutex
	errsDone := make(chan struct{})
	go func() {
		for e := range g.Errors() {
			errMu.Lock()
			res.Errors = append(res.Errors, e.Error())
			errMu.Unlock()
		}
		close(errsDone)
	}()
	consumeErr := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil {
				consumeErr <- err
				return
			}
		}
		consumeErr <- nil
	}()
	var failed error
	select {
	case <-h.enough:
	case failed = <-consumeErr:
		if failed == nil {
			failed = fmt.Errorf("the session ended early")
		}
	case <-time.After(timeout):
		failed = fmt.Errorf("read %d of %d records in %v", len(res.Offsets), n, timeout)
	}
	cancel()
	if failed == nil {
		failed = <-consumeErr
	}
	g.Close() // the session's end flushed the marked offsets
	<-errsDone
	errMu.Lock()
	defer errMu.Unlock()
	if failed == nil && len(res.Errors) > 0 {
		failed = fmt.Errorf("the group reported errors")
	}
	return failed
}
