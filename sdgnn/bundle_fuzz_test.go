package sdgnn

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// tinyBundle returns a bundle of 4 nodes, 2 channels, window 3 and hidden
// width 2 with random layers: small enough that a fuzzer can rewrite every
// field of its file.
func tinyBundle(tb testing.TB) *Bundle {
	tb.Helper()
	const nodes, channels, window, hidden, steps = 4, 2, 3, 2, 6
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]float64, steps*nodes*channels)
	for i := range data {
		data[i] = 1 + rng.Float64()
	}
	norm, err := snapshot.FitNormalizer(data, nodes, channels, steps)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PhiHidden = 3
	theta := &Theta{
		Nodes:   [][]int{{0, 1}, {1}, {0, 2, 3}, {3}},
		Weights: [][]float64{{0.5, 0.25}, {1}, {0.1, 0.2, 0.3}, {2}},
	}
	meta := BundleMeta{Dataset: "tiny", Nodes: nodes, Channels: []string{"a", "b"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg, Version: "v1"}
	b, err := NewBundle(meta, gru.New(norm.Inputs(), hidden, rng), nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), theta, nn.NewMLP("dec", hidden, 5, channels, rng))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzDecodeBundle gives the bundle decoder model files whose every byte
// before the checksum the fuzzer chooses, the checksum being computed after
// the mutation, so that the decoder meets contents that the checksum would
// pass: what a buggy or hostile writer, not a damaged disk, produces.
// Whatever is decoded, without a panic or an allocation the file's size does
// not justify, must embed and forecast every node.
func FuzzDecodeBundle(f *testing.F) {
	f.Add(bundleBody(f, tinyBundle(f)))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256.Sum256(body)
		cf, err := checkpoint.Read(bytes.NewReader(append(body[:len(body):len(body)], sum[:]...)))
		if err != nil {
			return
		}
		b, err := decodeBundle(cf)
		if err != nil {
			return
		}
		checkUsable(t, b)
	})
}

// FuzzBundleMeta gives the decoder the tensors of a valid bundle with
// metadata the fuzzer writes, where FuzzDecodeBundle's mutations mostly
// break the header's JSON.
func FuzzBundleMeta(f *testing.F) {
	file, _, err := tinyBundle(f).file()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(file.Meta))
	named := tinyBundle(f)
	named.Meta.SensorIDs = []string{"773869", "767541", "767542", "717447"}
	named.Meta.Locations = []pems.Location{{Lat: 34.15, Lon: -118.3}, {Lat: 34.1, Lon: -118.2}, {Lat: 34.2, Lon: -118.1}, {Lat: 34.0, Lon: -118.25}}
	namedFile, _, err := named.file()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(namedFile.Meta))
	f.Fuzz(func(t *testing.T, meta []byte) {
		cf := *file
		cf.Meta = meta
		b, err := decodeBundle(&cf)
		if err != nil {
			return
		}
		checkUsable(t, b)
		// Recorded IDs name every sensor, once each.
		if _, err := b.SensorNames(); err != nil {
			t.Fatalf("decoded bundle's sensors cannot be named: %v", err)
		}
	})
}

// bundleBody returns b's file without its checksum.
func bundleBody(tb testing.TB, b *Bundle) []byte {
	tb.Helper()
	file, _, err := b.file()
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := checkpoint.Write(&buf, file); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()[:buf.Len()-sha256.Size]
}

// checkUsable embeds one window for every node and forecasts every node from
// its receptive nodes' embeddings, as the streaming service does.
func checkUsable(t *testing.T, b *Bundle) {
	t.Helper()
	n, T, C, d := b.Theta.N(), b.Meta.Window, len(b.Meta.Norm.Mean), b.Meta.Hidden
	windows := make([]float64, n*T*C)
	for i := range windows {
		windows[i] = float64(i%7) + 0.5
	}
	embs := make([]float64, n*d)
	if err := b.EmbedBatch(embs, windows, make([]int64, n)); err != nil {
		t.Fatalf("decoded bundle cannot embed: %v", err)
	}
	dst := make([]float64, C)
	for z := range n {
		ks, _ := b.Receptive(z)
		emb := make([][]float64, len(ks))
		for i, k := range ks {
			emb[i] = embs[k*d : (k+1)*d]
		}
		if err := b.Forecast(dst, z, emb); err != nil {
			t.Fatalf("decoded bundle cannot forecast node %d: %v", z, err)
		}
	}
}

// TestDecodeBundleRefuses checks the decoder's answer to files that the
// checksum passes but whose contents do not fit together.
func TestDecodeBundleRefuses(t *testing.T) {
	good := tinyBundle(t)
	for _, c := range []struct {
		name string
		edit func(b *Bundle)
		want string // in the error
	}{
		{"unsorted receptive nodes", func(b *Bundle) { b.Theta.Nodes[2] = []int{2, 0, 3} }, "not in increasing order"},
		{"repeated receptive node", func(b *Bundle) { b.Theta.Nodes[2] = []int{0, 0, 3} }, "not in increasing order"},
		// Sizes the tensors do not have: refused before anything of that
		// size is allocated (else these would exhaust memory).
		{"hidden 2⁴⁰", func(b *Bundle) { b.Meta.Hidden = 1 << 40 }, "more parameters than the file's"},
		{"hidden overflowing", func(b *Bundle) { b.Meta.Hidden = 1 << 62 }, "more parameters than the file's"},
		{"φ hidden 2⁴⁰", func(b *Bundle) { b.Meta.Config.PhiHidden = 1 << 40 }, "more parameters than the file's"},
		{"hidden 5", func(b *Bundle) { b.Meta.Hidden = 5 }, "more parameters than the file's"},
		{"window 2³⁰", func(b *Bundle) { b.Meta.Window = 1 << 30 }, "window 1073741824 exceeds 2016 steps"},
		// Sizes within the file's values, but not its tensors' shapes.
		{"hidden 1", func(b *Bundle) { b.Meta.Hidden = 1 }, "has shape"},
		{"φ hidden 2", func(b *Bundle) { b.Meta.Config.PhiHidden = 2 }, "has shape"},
		// Weights no forecast can come from: each would make every
		// forecast NaN, silently, rather than refuse the file.
		{"NaN GRU weight", func(b *Bundle) { b.GRU.Wx.W.Set(0, 1, math.NaN()) }, "gru.Wx"},
		{"+Inf φ weight", func(b *Bundle) { b.Phi.Params()[0].W.Set(1, 0, math.Inf(1)) }, "not finite"},
		{"-Inf decoder bias", func(b *Bundle) { p := b.Dec.Params(); p[len(p)-1].W.Set(0, 1, math.Inf(-1)) }, "not finite"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := good.Clone()
			if err != nil {
				t.Fatal(err)
			}
			c.edit(b)
			f, _, err := b.file()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeBundle(f); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestDecodeThetaRefuses checks the decoder's answer to Θ tensors that the
// checksum passes but that hold no sparse matrix: node ids and row
// pointers are stored as float64, and one that is not a whole number must
// be refused, not truncated to another node.
func TestDecodeThetaRefuses(t *testing.T) {
	good, _, err := tinyBundle(t).file()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tensor string
		at     int
		v      float64
	}{
		{"theta.col", 0, 0.5},            // node 0 (of 0, 1) read as 0
		{"theta.col", 4, 2.25},           // node 2 (of 0, 2, 3) read as 2
		{"theta.rowptr", 1, 2.5},         // row 0 = [0, 2) read as [0, 2)
		{"theta.rowptr", 4, 7.75},        // the end, 7, read as 7
		{"theta.col", 1, math.NaN()},     // no node
		{"theta.rowptr", 2, math.Inf(1)}, // no position
	} {
		t.Run(fmt.Sprintf("%s[%d]=%v", c.tensor, c.at, c.v), func(t *testing.T) {
			f := *good
			f.Tensors = slices.Clone(good.Tensors)
			for i := range f.Tensors {
				if f.Tensors[i].Name == c.tensor {
					f.Tensors[i].Data = slices.Clone(f.Tensors[i].Data)
					f.Tensors[i].Data[c.at] = c.v
				}
			}
			if _, err := decodeBundle(&f); err == nil || !strings.Contains(err.Error(), c.tensor) {
				t.Errorf("got error %v, want one naming %s", err, c.tensor)
			}
		})
	}
}

// TestDecodeBundleChannelNames gives the decoder a bundle whose metadata
// names another number of channels than its normaliser and decoder have:
// the service's CSV header would then misalign every value after the
// forecasts'. It must be refused, naming channel_names; a bundle without
// names (written before they were kept) still loads.
func TestDecodeBundleChannelNames(t *testing.T) {
	for _, c := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"a", "b"}, true},
		{nil, true},
		{[]string{"a", "b", "c"}, false},
		{[]string{"a"}, false},
	} {
		b := tinyBundle(t)
		b.Meta.Channels = c.names
		f, _, err := b.file()
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeBundle(f)
		if c.ok && err != nil {
			t.Errorf("channel names %q for 2 channels: %v", c.names, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "channel_names")) {
			t.Errorf("channel names %q for 2 channels: got error %v, want one naming channel_names", c.names, err)
		}
	}
}

// TestDecodeThetaNamesTensor gives the decoder Θ tensors whose lengths do
// not fit together, the checksum passing: the error must name the tensors
// that disagree, not blame the row pointers when they are right.
func TestDecodeThetaNamesTensor(t *testing.T) {
	good, _, err := tinyBundle(t).file()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		tensor string // its last value is dropped
		want   []string
		not    string
	}{
		{"a weight missing", "theta.val", []string{"theta.val", "theta.col"}, "row pointers"},
		{"a node id missing", "theta.col", []string{"theta.val", "theta.col"}, ""},
		{"a row pointer missing", "theta.rowptr", []string{"theta.rowptr"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := *good
			f.Tensors = slices.Clone(good.Tensors)
			for i := range f.Tensors {
				if f.Tensors[i].Name == c.tensor {
					f.Tensors[i].Data = f.Tensors[i].Data[:len(f.Tensors[i].Data)-1]
					f.Tensors[i].Shape = []int{len(f.Tensors[i].Data)}
				}
			}
			_, err := decodeBundle(&f)
			if err == nil {
				t.Fatal("decoded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want one naming %s", err, w)
				}
			}
			if c.not != "" && strings.Contains(err.Error(), c.not) {
				t.Errorf("got error %q, which blames the %s", err, c.not)
			}
		})
	}
}

// TestDecodeBundleRefusesUnknownTensor gives the decoder a valid bundle's
// file with one tensor more, as a writer of a bundle with another
// architecture (a third φ layer, say) would give it: dropping the tensor
// would load another model than the one saved, silently. It must be
// refused, naming the tensor.
func TestDecodeBundleRefusesUnknownTensor(t *testing.T) {
	good, _, err := tinyBundle(t).file()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeBundle(good); err != nil {
		t.Fatalf("the bundle as saved: %v", err)
	}
	f := *good
	f.Tensors = append(slices.Clone(good.Tensors), checkpoint.Tensor{Name: "phi.l3.W", Shape: []int{2, 2}, Data: []float64{1, 0, 0, 1}})
	if _, err := decodeBundle(&f); err == nil || !strings.Contains(err.Error(), "phi.l3.W") {
		t.Errorf("got error %v, want one naming phi.l3.W", err)
	}
}

// TestSaveRefusesWhatWouldNotLoad checks that Save writes no bundle that
// LoadBundle would refuse (channel names of another count, a decoder of
// another width than the channels, a φ not of the hidden width): it
// wrote such a file, found out only when the service loaded it.
func TestSaveRefusesWhatWouldNotLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name  string
		spoil func(b *Bundle)
		want  string
	}{
		{"channel names", func(b *Bundle) { b.Meta.Channels = []string{"a", "b", "c"} }, "channel_names"},
		{"decoder width", func(b *Bundle) { b.Dec = nn.NewMLP("dec", b.Meta.Hidden, 5, 3, rng) }, "dec."},
		{"φ width", func(b *Bundle) {
			b.Phi = nn.NewMLP("phi", b.Meta.Hidden+1, b.Meta.Config.PhiHidden, b.Meta.Hidden, rng)
		}, "phi."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tinyBundle(t)
			tc.spoil(b)
			path := filepath.Join(t.TempDir(), "b.sdgnn")
			err := b.Save(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Save: %v, want an error naming %s and %q", err, path, tc.want)
			}
			if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("Save left a file (%v)", serr)
			}
		})
	}
	b := tinyBundle(t)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBundle(path); err != nil {
		t.Fatal(err)
	}
}

// TestBundleGraph saves bundles with and without the fingerprint of the
// road graph they were distilled on: it comes back as written, a bundle
// without one (written before they were kept, as the committed results'
// are) loads with none, and one that no writer makes is refused, naming
// the fingerprint.
func TestBundleGraph(t *testing.T) {
	g := (&pems.Graph{Nodes: 4, Edges: []pems.Edge{{From: 0, To: 1, Cost: 1}, {From: 1, To: 2, Cost: 1}, {From: 2, To: 3, Cost: 1}}}).Fingerprint(false)
	other, bad := g, g
	other.Nodes = 170
	bad.SHA256 = "ring"
	for _, c := range []struct {
		name  string
		graph *pems.GraphFingerprint
		want  string // in the error; "" for none
	}{
		{"fingerprinted", &g, ""},
		{"none", nil, ""},
		{"another node count", &other, "graph fingerprint of 170 nodes for a model of 4"},
		{"not a SHA-256", &bad, "64 lower-case hex digits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := tinyBundle(t)
			b.Meta.Graph = c.graph
			path := filepath.Join(t.TempDir(), "b.sdgnn")
			if err := b.Save(path); c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Save: %v, want an error with %q", err, c.want)
			}
			if c.want != "" {
				return
			}
			l, err := LoadBundle(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Meta.Graph; (got == nil) != (c.graph == nil) || got != nil && *got != *c.graph {
				t.Errorf("graph %v, saved %v", got, c.graph)
			}
		})
	}
}
