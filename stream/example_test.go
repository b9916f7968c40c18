package stream_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// Example runs readings through the pipeline a broker layer drives:
// decode, validate, apply, emit, encode; a bad message becomes a dead
// letter.
func Example() {
	// A toy model: 3 sensors, window 2, 1 channel; sensor z's forecast uses
	// sensors z and z+1 (mod 3). A real service loads one (sdgnn.LoadBundle).
	rng := rand.New(rand.NewPCG(1, 2))
	theta := &sdgnn.Theta{Nodes: [][]int{{0, 1}, {1, 2}, {0, 2}}, Weights: [][]float64{{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}}}
	meta := sdgnn.BundleMeta{Nodes: 3, Window: 2, Hidden: 4, Version: "toy-1",
		Norm: snapshot.Normalizer{Mean: []float64{100}, Std: []float64{10}}}
	b, err := sdgnn.NewBundle(meta, gru.New(1, 4, rng), nn.NewMLP("phi", 4, 4, 4, rng), theta, nn.NewMLP("dec", 4, 4, 1, rng))
	if err != nil {
		fmt.Println(err)
		return
	}
	const step = 5 * 60000
	st, err := stream.NewState(b, step)
	if err != nil {
		fmt.Println(err)
		return
	}
	em := stream.NewEmitter(st, 2*time.Minute)
	now := time.UnixMilli(1699999800000 + step + 10000) // 10 s after slot 1699999800000 ends
	v := &stream.Validator{Nodes: 3, Channels: 1, StepMs: step, MaxAgeSlots: 12, MaxFutureSlots: 1,
		Now: func() time.Time { return now }}

	msgs := []struct{ key, value string }{
		{"0", `{"v":1,"sensor":0,"ts":1699999800000,"values":[103.5]}`},
		{"1", `{"v":1,"sensor":1,"ts":1699999800000,"values":[97]}`},
		{"2", `{"v":1,"sensor":2,"ts":1699999800001,"values":[99]}`},
	}
	var out []byte
	for _, m := range msgs {
		r, err := stream.DecodeReading([]byte(m.key), []byte(m.value))
		if err == nil {
			err = v.Check(r)
		}
		if err != nil {
			st.Counters.Reject(err)
			dl := stream.NewDeadLetter(err, []byte(m.key), []byte(m.value), "readings", 0, 2)
			fmt.Printf("dead letter: %s\n", stream.EncodeDeadLetter(nil, &dl))
			continue
		}
		res, err := st.Apply(r)
		if err != nil {
			fmt.Println(err)
			return
		}
		em.OnApply(res, now)
		// Every forecast due, its decoder run once for all of them.
		fs, err := em.EmitMany(em.Due(now), now)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, f := range fs {
			out = stream.EncodeForecast(out[:0], &f)
			fmt.Printf("forecast sensor %s for %d, stale %d, from", f.Name(), f.TS, f.StaleSlots)
			for _, in := range f.Inputs {
				fmt.Printf(" sensor %s at %d (gaps %d)", in.Name(), in.TS, in.Gaps)
			}
			fmt.Println()
		}
	}
	// Output:
	// forecast sensor 0 for 1700000100000, stale 0, from sensor 0 at 1699999800000 (gaps 1) sensor 1 at 1699999800000 (gaps 1)
	// dead letter: {"v":1,"reason":"off_grid","detail":"ts 1699999800001 is not a multiple of the 300000 ms slot","key":"2","value":"{\"v\":1,\"sensor\":2,\"ts\":1699999800001,\"values\":[99]}","topic":"readings","partition":0,"offset":2}
}

// ExamplePartScope scores a replay's held-out part apart: the test part of
// a split by windows (positions 8 and 9 of every ten snapshots) of a model
// with 12-step windows, the series' step 0 at midnight.
func ExamplePartScope() {
	split, err := snapshot.WindowSplit(100, [3]float64{7, 1, 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	const step = 15 * 60000
	start := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	sc := &stream.PartScope{Name: "test part", Part: split.Test, Window: 12, StartMs: start}
	live, err := stream.NewLive(stream.LiveConfig{Nodes: 2, Channels: 1, StepMs: step, Part: sc})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Steps 19 and 20 are the targets of snapshots 7 (validation) and 8
	// (test).
	for _, p := range []struct {
		step           int64
		forecast, read float64
	}{{19, 50, 40}, {20, 50, 45}} {
		ts := start + p.step*step
		fmt.Printf("step %d in the part: %v\n", p.step, sc.Holds(0, ts, step))
		live.Forecast(0, ts, []float64{p.forecast})
		live.Reading(0, ts, []float64{p.read})
	}
	part, _ := live.PartOverall()
	fmt.Printf("every forecast: MAE %.1f over %d; test part: MAE %.1f over %d\n", live.Overall().MAE, live.Overall().Count, part.MAE, part.Count)
	// Output:
	// step 19 in the part: false
	// step 20 in the part: true
	// every forecast: MAE 7.5 over 2; test part: MAE 5.0 over 1
}

// toy returns an untrained bundle of the toy dataset: nodes sensors, each
// its own only receptive node, windows of 2 steps of one channel.
func toy(version string, nodes int, seed uint64) *sdgnn.Bundle {
	rng := rand.New(rand.NewPCG(seed, 2))
	theta := &sdgnn.Theta{Nodes: make([][]int, nodes), Weights: make([][]float64, nodes)}
	for z := range nodes {
		theta.Nodes[z], theta.Weights[z] = []int{z}, []float64{1}
	}
	meta := sdgnn.BundleMeta{Dataset: "toy", Nodes: nodes, Window: 2, Hidden: 4, Version: version,
		Norm: snapshot.Normalizer{Mean: []float64{100}, Std: []float64{10}}}
	b, err := sdgnn.NewBundle(meta, gru.New(1, 4, rng), nn.NewMLP("phi", 4, 4, 4, rng), theta, nn.NewMLP("dec", 4, 4, 1, rng))
	if err != nil {
		panic(err)
	}
	return b
}

// ExampleService_Reload swaps the model of a service for a newly distilled
// one; a running service (Run) does it between two committed batches, and
// forecaster serve on SIGHUP. A bundle of another shape is refused and the
// model served is kept.
func ExampleService_Reload() {
	// No connection is made before Run.
	svc, err := stream.NewService(toy("toy-1", 3, 1), stream.Config{Brokers: []string{"127.0.0.1:9092"}, StepMs: 5 * 60000})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(svc.Reload(toy("toy-4-sensors", 4, 2)))
	fmt.Println(svc.Reload(toy("toy-2", 3, 3)))
	fmt.Println("serving", svc.Bundle().Meta.Version, "after", svc.Counters().Reloads.Load(), "reload and", svc.Counters().ReloadFailures.Load(), "refusal")
	// Output:
	// reload model: bundle toy-4-sensors has 4 sensors, the service 3
	// <nil>
	// serving toy-2 after 1 reload and 1 refusal
}

// ExampleService_Handler_reload serves POST /-/reload (Config.ReloadModel)
// for an orchestrator that rolls a model out by calling a URL: the hook
// reads the new model (here from a slice standing for the file, as
// forecaster serve -http-reload reads its -model file) and reloads it.
func ExampleService_Handler_reload() {
	rollouts := []*sdgnn.Bundle{toy("toy-4-sensors", 4, 2), toy("toy-2", 3, 3)}
	var svc *stream.Service
	cfg := stream.Config{Brokers: []string{"127.0.0.1:9092"}, StepMs: 5 * 60000,
		ReloadModel: func(ctx context.Context) (string, error) {
			b := rollouts[0]
			rollouts = rollouts[1:]
			if err := svc.ReloadContext(ctx, b); err != nil {
				return "", err
			}
			return b.Meta.Version, nil
		}}
	svc, err := stream.NewService(toy("toy-1", 3, 1), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		w := httptest.NewRecorder()
		svc.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/-/reload", nil))
		fmt.Print(w.Code, " ", w.Body.String())
	}
	// Output:
	// 409 reload refused: reload model: bundle toy-4-sensors has 4 sensors, the service 3; serving toy-1
	// 200 serving toy-2
}

// A Readiness as /readyz writes it: one line per check, then the verdict.
// Service.Readiness runs the checks; a load balancer reads the status code
// (200 or 503), an operator the lines.
func ExampleReadiness_Write() {
	r := stream.Readiness{Ready: false, Checks: []stream.Check{
		{Name: "started", OK: true, Detail: "consuming"},
		{Name: "broker", OK: true, Detail: "answered 1.2s ago"},
		{Name: "consuming", OK: true, Detail: "last batch finished 80ms ago"},
		{Name: "lag", OK: false, Detail: "5230 readings behind, more than 1000: catching up"},
	}}
	r.Write(os.Stdout)
	// Output:
	// [+]started ok: consuming
	// [+]broker ok: answered 1.2s ago
	// [+]consuming ok: last batch finished 80ms ago
	// [-]lag failed: 5230 readings behind, more than 1000: catching up
	// readyz check failed
}

// A service for a managed Kafka cluster that wants TLS and SCRAM
// (security.protocol=SASL_SSL): the authority's certificate from a file,
// the password from the environment. Security goes in Config, and the same
// value in PublishConfig; Dialer and Transport serve kafka-go readers and
// writers of one's own.
func ExampleSecurity() {
	tlsConfig, err := stream.NewTLS("/etc/kafka/ca.pem", "", "", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	mechanism, err := stream.NewSASL("SCRAM-SHA-512", "forecaster", os.Getenv("SDGNN_SASL_PASSWORD"))
	if err != nil {
		fmt.Println(err)
		return
	}
	sec := stream.Security{TLS: tlsConfig, SASL: mechanism}
	cfg := stream.Config{Brokers: []string{"kafka-1.example.net:9093"}, Security: sec, StepMs: 5 * 60 * 1000}
	fmt.Println(cfg.Security)
}

// The HTTP endpoints over mutual TLS, the certificate and the clients'
// authorities both rotated without a restart: Reload reads each file
// again, and the next handshakes take what was read (the forecaster's
// serve does this on SIGHUP and POST /-/reload).
func ExampleAuthorities() {
	cert, err := stream.LoadKeyPair("/etc/forecaster/https.pem", "/etc/forecaster/https-key.pem", "-http-tls-cert", "-http-tls-key")
	if err != nil {
		fmt.Println(err)
		return
	}
	clients, err := stream.LoadAuthorities("/etc/forecaster/clients-ca.pem", "-http-tls-client-ca")
	if err != nil {
		fmt.Println(err)
		return
	}
	httpTLS := &tls.Config{
		MinVersion:       tls.VersionTLS12,
		GetCertificate:   cert.GetCertificate,
		ClientAuth:       tls.RequireAnyClientCert, // checked by VerifyClient, not against ClientCAs
		VerifyConnection: clients.VerifyClient,
	}
	cfg := stream.Config{HTTPAddr: ":8443", HTTPTLS: httpTLS, StepMs: 5 * 60 * 1000}
	_ = cfg
	// Later, on a signal:
	if _, err := clients.Reload(); err != nil {
		fmt.Println("kept the authorities in use:", err)
	}
}

// A transaction marker, as kafka-go's Reader hands it over among the
// readings, told from a reading.
func ExampleTxnMarker() {
	commit, ok := stream.TxnMarker([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 3})
	fmt.Println(commit, ok)
	commit, ok = stream.TxnMarker([]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 3})
	fmt.Println(commit, ok)
	_, ok = stream.TxnMarker([]byte("12"), []byte(`{"v":1,"sensor":12,"ts":1767225600000,"values":[64.2]}`))
	fmt.Println(ok)
	// Output:
	// true true
	// false true
	// false
}

// Readings from CSV published into the readings topic of an embedded
// broker, each checked as the service will check it; a bad row is
// named and passed over.
func ExamplePublishReadings() {
	emb, err := stream.StartEmbedded(0, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer emb.Close()
	ctx := context.Background()
	if err := (stream.Security{}).EnsureTopics(ctx, []string{emb.Addr}, 4, "readings"); err != nil {
		fmt.Println(err)
		return
	}
	in := strings.NewReader(`ts,sensor,flow,occupancy,speed
2026-01-01T00:00:00Z,12,310,0.061,64.2
2026-01-01T00:00:00Z,400,310,0.061,64.2
2026-01-01T00:00:00Z,13,295,0.058,63.9
2026-01-01T00:00:00Z,14,295,0.058
`)
	c, err := stream.NewCSVReader(in, []string{"flow", "occupancy", "speed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	v := stream.Validator{Nodes: 307, Channels: 3, StepMs: 5 * 60 * 1000}
	next := func() (stream.Reading, error) {
		for {
			r, err := c.Read()
			if err == nil {
				err = v.Check(r)
			}
			var ce *stream.CSVError
			switch {
			case errors.As(err, &ce): // not a reading; it names its line
				fmt.Println("skipped:", err)
				continue
			case stream.ReasonOf(err) != "": // a reading the service would refuse
				fmt.Printf("skipped: line %d: %v\n", c.Line(), err)
				continue
			}
			return r, err // a reading, io.EOF at the end, or the input's failure
		}
	}
	n, err := stream.PublishReadings(ctx, next, stream.FeedConfig{Brokers: []string{emb.Addr}, Topic: "readings"})
	fmt.Println(n, err)
	// Output:
	// skipped: line 3: reading rejected (unknown_sensor): sensor 400 outside [0,307)
	// skipped: line 5: 4 fields, the header has 5
	// 2 <nil>
}
