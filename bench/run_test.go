package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunScriptSameThreads runs bench/run with stand-ins for go and
// python that only log how they were called, and holds it to giving Go's
// teacher training the threads it gives PyTorch's: the ratio of their
// epochs compared Go on every core of the machine with PyTorch on 2.
func TestRunScriptSameThreads(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	stub := func(name, body string) string {
		p := filepath.Join(dir, "bin", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\necho \"GOMAXPROCS=${GOMAXPROCS:-} " + name + " $*\" >> \"$STUBLOG\"\n" + body
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stub("go", `case "$1" in env) echo go0 ;; esac
`)
	py := stub("python", `case "$1" in
-) cat > /dev/null ;;
*lars_sklearn.py) echo '{}' ;;
*grugcn_torch.py) echo '{}' ;;
esac
`)
	cmd := exec.Command("bash", "run")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BENCH_PYTHON="+py, "STUBLOG="+log, "OUT="+filepath.Join(dir, "out"), "PEMS_DATA="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench/run: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := string(b)
	train := regexp.MustCompile(`(?m)^GOMAXPROCS=(\S*) go run \./cmd/pems-train `).FindStringSubmatch(calls)
	torch := regexp.MustCompile(`(?m)^GOMAXPROCS=\S* python bench/reference/grugcn_torch\.py \S+ \d+ (\d+) `).FindAllStringSubmatch(calls, -1)
	if train == nil || len(torch) != 2 {
		t.Fatalf("bench/run made no Go training or not both PyTorch runs:\n%s", calls)
	}
	for _, m := range torch {
		if train[1] != m[1] {
			t.Errorf("Go trains with GOMAXPROCS=%q, PyTorch with %s threads:\n%s", train[1], m[1], calls)
		}
	}
}
