package stream

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestKcatInterop proves that a Kafka client that is not kafka-go talks to
// the embedded broker and the service: Debian's kcat (librdkafka) produces
// the readings (and one malformed message) exactly as README.md shows, and
// consumes the forecasts and the dead letter, which must equal the State's
// own forecasts for the same readings. It does so in plaintext, and over
// TLS against a broker that verifies nothing else (security.protocol=SSL).
func TestKcatInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat not installed (.ci/run installs it): ", err)
		}
		t.Skip("kcat not installed: apt-get install kcat")
	}
	t.Run("PLAINTEXT", func(t *testing.T) {
		emb, err := StartEmbedded(0, "")
		if err != nil {
			t.Fatal(err)
		}
		forgetBrokers()
		defer emb.Close()
		testKcatInterop(t, kcat, emb.Addr, Security{}, nil, nil)
	})
	// Readings produced compressed, as many producers send them (a Java
	// client's compression.type): every codec kafka-go reads.
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run("compressed "+codec, func(t *testing.T) {
			emb, err := StartEmbedded(0, "")
			if err != nil {
				t.Fatal(err)
			}
			forgetBrokers()
			defer emb.Close()
			testKcatInterop(t, kcat, emb.Addr, Security{}, nil, []string{"-z", codec})
		})
	}
	// Over TLS only: librdkafka 2.0 takes kfake's SASL for none (see
	// tlstest.Broker); TestServiceOverTLSAndSASL covers SASL with kafka-go.
	t.Run("SSL", func(t *testing.T) {
		certs := tlstest.New(t)
		addr := tlstest.Broker(t, certs)
		client, err := NewTLS(certs.CAFile, "", "", "")
		if err != nil {
			t.Fatal(err)
		}
		testKcatInterop(t, kcat, addr, Security{TLS: client}, []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + certs.CAFile}, nil)
	})
}

// testKcatInterop runs the service on the broker at addr, reached with sec,
// and kcat with the extra arguments kcatArgs, its producer with prodArgs
// too.
func testKcatInterop(t *testing.T, kcat, addr string, sec Security, kcatArgs, prodArgs []string) {
	const n, T, C, d = 4, 2, 1, 4
	b := testBundle(t, n, T, C, d, 5)
	ref, err := b.Clone()
	if err != nil {
		t.Fatal(err)
	}
	const s0 = 5_900_000 // slot index of the first reading
	now := time.UnixMilli((s0 + 3) * testStep)
	svc, err := NewService(b, Config{Brokers: []string{addr}, Security: sec, StepMs: testStep, Lateness: time.Hour,
		Now: func() time.Time { return now }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sec.EnsureTopics(ctx, []string{addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// Readings of slots s0 … s0+2 of every sensor, as kcat key:value lines.
	st, err := NewState(ref, testStep)
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for s := int64(0); s < 3; s++ {
		for z := 0; z < n; z++ {
			r := Reading{Sensor: z, TS: (s0 + s) * testStep, Values: []float64{50 + 3*float64(z) - 2*float64(s) + 0.25}}
			if _, err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&in, "%d:%s\n", z, EncodeReading(nil, &r))
		}
	}
	in.WriteString(`2:{"v":1,"sensor":2,"ts":oops}` + "\n")
	prod := exec.CommandContext(ctx, kcat, append(append([]string{"-P", "-b", addr, "-t", "readings", "-K:"}, kcatArgs...), prodArgs...)...)
	prod.Stdin = &in
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}

	consume := func(topic string, count int) []string {
		t.Helper()
		cmd := exec.CommandContext(ctx, kcat, append([]string{"-C", "-b", addr, "-t", topic, "-o", "beginning", "-c", fmt.Sprint(count), "-q", "-f", "%s\n"}, kcatArgs...)...)
		out, err := cmd.Output()
		if err != nil {
			c := svc.Counters()
			t.Fatalf("kcat -C -t %s: %v (%q); the service applied %d readings, emitted %d forecasts, rejected %d",
				topic, err, out, c.Applied.Load(), c.Emitted.Load(), c.Rejected[0].Load())
		}
		var lines []string
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return lines
	}
	// Targets s0+1 … s0+3 of every sensor.
	lines := consume("forecasts", 3*n)
	if len(lines) != 3*n {
		t.Fatalf("kcat read %d forecasts, want %d", len(lines), 3*n)
	}
	seen := map[[2]int64]bool{}
	var want Forecast
	for _, l := range lines {
		f, err := DecodeForecast([]byte(l))
		if err != nil {
			t.Fatalf("forecast %q: %v", l, err)
		}
		key := [2]int64{int64(f.Sensor), f.TS / testStep}
		if seen[key] || key[1] < s0+1 || key[1] > s0+3 {
			t.Fatalf("forecast %s: repeated or outside slots %d…%d", l, s0+1, s0+3)
		}
		seen[key] = true
		if err := st.ForecastSlot(f.Sensor, f.TS, &want); err != nil {
			t.Fatal(err)
		}
		if math.Abs(f.Values[0]-want.Values[0]) > 1e-9 || f.StaleSlots != 0 {
			t.Errorf("sensor %d slot %d: %v stale %d through kcat, %v from the state", f.Sensor, key[1], f.Values, f.StaleSlots, want.Values)
		}
	}
	dl := consume("readings-dead-letter", 1)
	if len(dl) != 1 || !strings.Contains(dl[0], `"reason":"malformed"`) || !strings.Contains(dl[0], `"key":"2"`) {
		t.Errorf("dead letters through kcat: %q", dl)
	}
}
