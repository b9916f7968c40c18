package pems

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// EnvDataDir is the environment variable that ResolveDataDir consults when
// no directory is given explicitly.
const EnvDataDir = "PEMS_DATA"

// CacheDir returns the per-user data directory that datasets are
// downloaded to when no other is named (pems-train datasets -fetch,
// forecaster demo): sdgnn/datasets in os.UserCacheDir, such as
// ~/.cache/sdgnn/datasets on Linux ($XDG_CACHE_HOME/sdgnn/datasets where
// that is set), ~/Library/Caches/sdgnn/datasets on macOS and
// %LocalAppData%\sdgnn\datasets on Windows.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("per-user cache directory: %w", err)
	}
	return filepath.Join(base, "sdgnn", "datasets"), nil
}

// ResolveDataDir picks the data directory: flagValue if it is not empty,
// else $PEMS_DATA if set, else the first existing directory a/../shared/datasets
// for a the current directory or one of its ancestors, so that both a
// checkout and its subdirectories find the shared/datasets folder beside the
// checkout, else the per-user CacheDir if it exists (where downloads go).
// An explicit directory must exist. The error lists every place looked at.
func ResolveDataDir(flagValue string) (string, error) {
	if flagValue != "" {
		if err := isDir(flagValue); err != nil {
			return "", fmt.Errorf("data directory from flag: %w", err)
		}
		return flagValue, nil
	}
	if env := os.Getenv(EnvDataDir); env != "" {
		if err := isDir(env); err != nil {
			return "", fmt.Errorf("data directory from $%s: %w", EnvDataDir, err)
		}
		return env, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find data directory: %w", err)
	}
	var looked []string
	for a := wd; ; {
		cand := filepath.Join(a, "..", "shared", "datasets")
		if isDir(cand) == nil {
			return cand, nil
		}
		looked = append(looked, cand)
		parent := filepath.Dir(a)
		if parent == a {
			break
		}
		a = parent
	}
	cache, cerr := CacheDir()
	if cerr == nil {
		if isDir(cache) == nil {
			return cache, nil
		}
		looked = append(looked, cache)
	}
	return "", fmt.Errorf("find data directory: no flag, $%s not set, no shared/datasets beside %s or its ancestors, and no per-user cache; looked in %s (pems-train datasets -fetch NAME downloads a dataset into the cache)",
		EnvDataDir, wd, strings.Join(slices.Compact(looked), ", "))
}

func isDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	return nil
}

// ChecksumFile is the name of the sha256sum-format list of files in a data
// directory.
const ChecksumFile = "SHA256SUMS"

// VerifyChecksums checks the SHA-256 sums of the files listed in
// dir/SHA256SUMS (sha256sum format, paths relative to dir). Listed files
// that do not exist are returned in missing, in list order, and are not an
// error, since datasets arrive at different times. A mismatch is an error
// naming the file and both sums; all mismatches are reported. Files the
// list does not name are not checked: see Unlisted.
func VerifyChecksums(dir string) (missing []string, err error) {
	list, err := readChecksums(dir)
	if err != nil {
		return nil, fmt.Errorf("verify checksums: %w", err)
	}
	var errs []error
	for _, e := range list {
		got, err := sha256File(filepath.Join(dir, filepath.FromSlash(e.name)))
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, e.name)
			continue
		}
		if err != nil {
			return missing, fmt.Errorf("verify checksums: %w", err)
		}
		if !strings.EqualFold(got, e.sum) {
			errs = append(errs, fmt.Errorf("checksum mismatch for %s: got %s, want %s", e.name, got, strings.ToLower(e.sum)))
		}
	}
	if len(errs) > 0 {
		return missing, fmt.Errorf("verify checksums in %s: %w", dir, errors.Join(errs...))
	}
	return missing, nil
}

// Unlisted returns the files of the known datasets (Known) that are in
// dir but not listed in dir/SHA256SUMS, in Known's order: files that
// VerifyChecksums does not check, such as a series that arrived before its
// line in the list.
func Unlisted(dir string) ([]string, error) {
	list, err := readChecksums(dir)
	if err != nil {
		return nil, fmt.Errorf("unlisted files: %w", err)
	}
	listed := make(map[string]bool, len(list))
	for _, e := range list {
		listed[path.Clean(e.name)] = true
	}
	var out []string
	for _, in := range Known() {
		for _, rel := range in.Files() {
			if listed[path.Clean(rel)] {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
				out = append(out, rel)
			}
		}
	}
	return out, nil
}

// checksum is a line of a SHA256SUMS file.
type checksum struct {
	sum, name string // name relative to the directory, with slashes
}

// readChecksums reads and checks the lines of dir/SHA256SUMS.
func readChecksums(dir string) ([]checksum, error) {
	list := filepath.Join(dir, ChecksumFile)
	f, err := os.Open(list)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []checksum
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		want, name, ok := strings.Cut(text, " ")
		name = strings.TrimPrefix(strings.TrimLeft(name, " "), "*")
		if !ok || len(want) != 2*sha256.Size || name == "" {
			return nil, fmt.Errorf("%s:%d: want \"<sha256>  <path>\", got %q", list, line, text)
		}
		if _, err := hex.DecodeString(want); err != nil {
			return nil, fmt.Errorf("%s:%d: bad sha256 %q", list, line, want)
		}
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return nil, fmt.Errorf("%s:%d: path %q is not inside %s", list, line, name, dir)
		}
		out = append(out, checksum{sum: want, name: name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", list, err)
	}
	return out, nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
