package fetch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// Dataset downloads into the data directory dir the files of the named
// known dataset that are missing there or do not match their sums, from
// base (Base(): GitHub's raw files or a mirror). A file with no known
// public URL (the PeMS04 and PeMS08 series) is downloaded from
// seriesURL, a URL the user trusts, and verified the same way; without
// one, Dataset downloads the other files and then fails, saying where the
// file must be placed. Files that verify are left as they are.
func (f *Fetcher) Dataset(ctx context.Context, dir, name, base, seriesURL string) error {
	srcs, err := Sources(name)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	var lacking []Source
	for _, s := range srcs {
		dest := filepath.Join(dir, filepath.FromSlash(s.File))
		url := seriesURL
		if s.Fetchable() {
			url = s.URL(base)
		} else if url == "" {
			if st, err := Check(dest, s); err != nil {
				return fmt.Errorf("fetch %s: %w", s.Dataset, err)
			} else if st.State != Verified {
				lacking = append(lacking, s)
			}
			continue
		}
		if err := f.Download(ctx, url, dest, s); err != nil {
			return fmt.Errorf("fetch %s: %w", s.Dataset, err)
		}
	}
	if len(lacking) > 0 {
		s := lacking[0]
		return fmt.Errorf("fetch %s: no public URL is known for %s: download the %s yourself and place %s at %s, or give its URL (-url), which is verified by its git blob ID %s",
			s.Dataset, s.File, s.Release, filepath.Base(s.File), filepath.Join(dir, filepath.FromSlash(s.File)), s.GitBlob)
	}
	return nil
}

// TargetDir returns the data directory downloads go to: dataFlag if not
// empty, else $PEMS_DATA if set, else the per-user cache (pems.CacheDir).
// Unlike pems.ResolveDataDir it does not look for a shared/datasets
// folder, which is kept by others, and the directory need not exist yet.
func TargetDir(dataFlag string) (string, error) {
	if dataFlag != "" {
		return dataFlag, nil
	}
	if env := os.Getenv(pems.EnvDataDir); env != "" {
		return env, nil
	}
	return pems.CacheDir()
}

// Ensure returns a data directory that holds all the files of the named
// dataset, downloading them when none does: the directory
// pems.ResolveDataDir(dataFlag) finds, if it holds them, else TargetDir's
// after Dataset has fetched them there from Base(), saying on f.Progress
// what it downloads and from where. A dataset that cannot be fetched
// whole (PeMS04 and PeMS08, whose series have no known URL) is not
// downloaded: Ensure then returns dataFlag as it is, for the load to say
// what is missing.
func (f *Fetcher) Ensure(ctx context.Context, dataFlag, name string) (string, error) {
	in, err := pems.Lookup(name)
	if err != nil {
		return "", err
	}
	if dir, err := pems.ResolveDataDir(dataFlag); err == nil && hasFiles(dir, in) {
		return dir, nil
	}
	if !Fetchable(in.Name) {
		return dataFlag, nil
	}
	dir, err := TargetDir(dataFlag)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", in.Name, err)
	}
	if !hasFiles(dir, in) {
		f.say("%s is in no data directory: fetching it into %s from %s (%s)", in.Name, dir, Base(), upstreams(in.Name))
	}
	if err := f.Dataset(ctx, dir, in.Name, Base(), ""); err != nil {
		return "", err
	}
	return dir, nil
}

// hasFiles reports whether every file of in is in dir.
func hasFiles(dir string, in pems.Info) bool {
	for _, rel := range in.Files() {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); errors.Is(err, os.ErrNotExist) || err != nil {
			return false
		}
	}
	return true
}

// upstreams names the repositories and commits the named dataset's files
// come from.
func upstreams(name string) string {
	srcs, _ := Sources(name)
	var out []string
	for _, s := range srcs {
		if r := s.Repo + "@" + s.Commit[:12]; s.Fetchable() && !contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
