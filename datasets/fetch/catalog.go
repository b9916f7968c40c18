package fetch

import (
	"fmt"
	"os"
	"strings"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// GitHubRaw is the base URL of the upstream files: GitHub's raw-file host,
// which serves a repository's file at a commit as
// GitHubRaw/OWNER/REPO/COMMIT/PATH. It serves the pointer, not the
// content, of a file stored with Git LFS; such a file would need
// https://media.githubusercontent.com/media/OWNER/REPO/COMMIT/PATH.
const GitHubRaw = "https://raw.githubusercontent.com"

// EnvMirror is the environment variable that replaces GitHubRaw by a
// mirror serving the same paths.
const EnvMirror = "PEMS_DATA_MIRROR"

// Source is a dataset file as it is known: where it goes in a data
// directory, where it comes from and what it must hash to.
type Source struct {
	Dataset string // the known dataset it belongs to (pems.Info.Name)
	File    string // slash-separated, relative to the data directory (pems.Info.Files)
	// Repo, Commit and Path locate the file upstream; Repo is empty for a
	// file with no known public URL (the PeMS series).
	Repo, Commit, Path string
	Size               int64  // bytes; 0 where unknown
	SHA256             string // lower-case hex; empty where the file is known by GitBlob only
	// GitBlob is the git blob ID of the file, the SHA-1 of
	// "blob SIZE\x00" and the content, for the ASTGCN release's series,
	// which are known that way.
	GitBlob string
	// Release names the release that a file matching GitBlob is, for
	// "verified: Release".
	Release string
}

// Fetchable reports whether s has a known public URL.
func (s Source) Fetchable() bool { return s.Repo != "" }

// URL returns s's URL under base (GitHubRaw or a mirror): BASE/REPO/COMMIT/PATH.
func (s Source) URL(base string) string {
	return strings.TrimRight(base, "/") + "/" + s.Repo + "/" + s.Commit + "/" + s.Path
}

// Base returns the base URL of the upstream files: $PEMS_DATA_MIRROR if
// set, else GitHubRaw.
func Base() string {
	if m := os.Getenv(EnvMirror); m != "" {
		return m
	}
	return GitHubRaw
}

// Upstream commits named in shared/datasets/README.md.
const (
	tgcn    = "lehaifeng/T-GCN"
	tgcnAt  = "219a2346f5bf68d54d91a948e7a41a08f9edc46b"
	stcgcn  = "Bounger2/ST-CGCN"
	stcgAt  = "9ffcc0ad7e024c3c1dbcabdb05c1853059d399bd"
	astgcn  = "Davidham3/ASTGCN-2019-mxnet"
	astgAt  = "d5d40645fa45471f2b473fc49a29ec3f0a993c6d"
	release = "ASTGCN release"
)

// catalog lists the known files in pems.Known's order, each dataset's in
// pems.Info.Files's order.
var catalog = []Source{
	{"los-loop", "los-loop/los_speed.csv", tgcn, tgcnAt, "T-GCN/T-GCN-PyTorch/data/los_speed.csv", 3402125, "7b732d86ae32b2930595becba28aff39dacbfb2197e250fc0332e1744ce2cbf4", "", ""},
	{"los-loop", "los-loop/los_adj.csv", tgcn, tgcnAt, "T-GCN/T-GCN-PyTorch/data/los_adj.csv", 111686, "7a6eb41e10677992b5af50f5ab187c6c05c5c3a92cb973950cfddbf857361e76", "", ""},
	{"los-loop", "los-loop/graph_sensor_locations.csv", tgcn, tgcnAt, "STGC-GNN/data/METR-LA/graph_sensor_locations.csv", 6341, "eb8ea96e07358b45d0e4ba3b89c2673fa20c54af50150249e627389e749ade6f", "", ""},
	{"pems04", "pems/pems04/PEMS04.npz", "", "", "", 0, "", "a1a39eac4b86963b1ac22874fd1cc693eb642cd2", release},
	{"pems04", "pems/pems04/distance.csv", astgcn, astgAt, "data/PEMS04/distance.csv", 4852, "68ffaa80447eb34428a9999dc28363c61406ec0fd714686d0582d2386ac6f5f7", "", ""},
	{"pems08", "pems/pems08/PEMS08.npz", "", "", "", 0, "", "f5f3e84a00417573aa8487fe1e9e8cd13c6026c8", release},
	{"pems08", "pems/pems08/distance.csv", astgcn, astgAt, "data/PEMS08/distance.csv", 4032, "859d68e7583ed4e6016588eaaca494d3ece286dae361614c5c1833017f87eaa7", "", ""},
	{"sz-taxi", "sz-taxi/SZ_taxi.npz", stcgcn, stcgAt, "data/SZ_taxi/SZ_taxi.npz", 3714310, "b6f2008136f7223bf94adb6484da42b4f1235366eeff91dac38cb075ca916301", "", ""},
	{"sz-taxi", "sz-taxi/SZ_taxi_adj.csv", stcgcn, stcgAt, "data/SZ_taxi/SZ_taxi.csv", 48672, "4e40e865b29d73df8404f6cc4c1a0c5ba55aa575aef97a4e9ce4fcd30aad16d6", "", ""},
}

// Sources returns the files of the named known dataset (matched as
// pems.Lookup matches), in pems.Info.Files's order.
func Sources(name string) ([]Source, error) {
	in, err := pems.Lookup(name)
	if err != nil {
		return nil, err
	}
	var out []Source
	for _, s := range catalog {
		if s.Dataset == in.Name {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %s: no known files", in.Name)
	}
	return out, nil
}

// Fetchable reports whether every file of the named dataset has a known
// public URL, so that Dataset can download it whole.
func Fetchable(name string) bool {
	srcs, err := Sources(name)
	if err != nil {
		return false
	}
	for _, s := range srcs {
		if !s.Fetchable() {
			return false
		}
	}
	return true
}
