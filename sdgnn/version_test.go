package sdgnn

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/pemsforecast/sdgnn/checkpoint"
)

// TestDigestVersion: a bundle saved without a version gets one from its
// parameters, in the file and in memory; the same parameters give the same
// version whatever the metadata says, another parameter another version;
// a file written without one (before Save gave it) is read with the
// version Save gives; a version that was given is kept.
func TestDigestVersion(t *testing.T) {
	dir := t.TempDir()
	save := func(b *Bundle, name string) (*Bundle, string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := b.Save(path); err != nil {
			t.Fatal(err)
		}
		got, err := LoadBundle(path)
		if err != nil {
			t.Fatal(err)
		}
		return got, path
	}

	given, _ := save(tinyBundle(t), "given.sdgnn")
	if given.Meta.Version != "v1" {
		t.Errorf("a given version read back as %q, want v1", given.Meta.Version)
	}

	a := tinyBundle(t)
	a.Meta.Version = ""
	la, path := save(a, "a.sdgnn")
	if !regexp.MustCompile(`^sdgnn-tiny-[0-9a-f]{12}$`).MatchString(la.Meta.Version) {
		t.Fatalf("version %q: want sdgnn-tiny- and 12 hex digits", la.Meta.Version)
	}
	if a.Meta.Version != la.Meta.Version {
		t.Errorf("Save left version %q in memory, the file holds %q", a.Meta.Version, la.Meta.Version)
	}
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := DigestVersion("tiny", f.Digest()); la.Meta.Version != want {
		t.Errorf("version %q, DigestVersion of the file %q", la.Meta.Version, want)
	}

	b := tinyBundle(t)
	b.Meta.Version, b.Meta.Created, b.Meta.Teacher = "", "2026-11-25T21:00:00Z", "elsewhere.model"
	if lb, _ := save(b, "b.sdgnn"); lb.Meta.Version != la.Meta.Version {
		t.Errorf("same parameters, other metadata: version %q, want %q", lb.Meta.Version, la.Meta.Version)
	}

	c := tinyBundle(t)
	c.Meta.Version = ""
	c.Theta.Weights[2][1] += 1e-9
	if lc, _ := save(c, "c.sdgnn"); lc.Meta.Version == la.Meta.Version {
		t.Errorf("a θ changed by 1e-9, the version did not: %q", lc.Meta.Version)
	}

	// A file without a version, as reproduce wrote them before.
	var meta map[string]any
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	delete(meta, "version")
	if f.Meta, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.sdgnn")
	if err := checkpoint.WriteFile(old, f); err != nil {
		t.Fatal(err)
	}
	lo, err := LoadBundle(old)
	if err != nil {
		t.Fatal(err)
	}
	if lo.Meta.Version != la.Meta.Version {
		t.Errorf("a file without a version read as %q, want %q", lo.Meta.Version, la.Meta.Version)
	}
}
