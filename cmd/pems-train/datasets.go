package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/pemsforecast/sdgnn/datasets/fetch"
	"github.com/pemsforecast/sdgnn/datasets/pems"
)

func cmdDatasets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("datasets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents, then the per-user cache "+cacheDirHint()+")")
	verify := fs.Bool("verify", true, "verify SHA-256 checksums listed in the directory's SHA256SUMS")
	fetchName := fs.String("fetch", "", "download the named dataset's files from their public upstream (raw GitHub files pinned to a commit, verified by the SHA-256 sums shipped in the program) into -data, else $PEMS_DATA, else the per-user cache; set $"+fetch.EnvMirror+" to download from a mirror instead of "+fetch.GitHubRaw)
	seriesURL := fs.String("url", "", "with -fetch pems04 or pems08: a URL you trust for the ASTGCN release's series file (PEMS04.npz, PEMS08.npz), which has no known public URL; it is verified by its git blob ID")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "datasets: takes no arguments (got %q)\n", fs.Args())
		return errUsage
	}
	if *fetchName != "" {
		dir, err := fetchDataset(ctx, *fetchName, *dataDir, *seriesURL, stderr)
		if err != nil {
			return err
		}
		*dataDir = dir
	} else if *seriesURL != "" {
		return badFlags(errors.New("-url is the URL of a series for -fetch: give -fetch pems04 or -fetch pems08 with it"))
	}
	dir, derr := pems.ResolveDataDir(*dataDir)
	if derr != nil {
		fmt.Fprintf(stdout, "data directory: not found: %v\n", derr)
	} else {
		fmt.Fprintf(stdout, "data directory: %s\n", dir)
	}
	if err := listDatasets(stdout, dir, derr == nil); err != nil {
		return err
	}
	if derr != nil || !*verify {
		return derr
	}
	return verifyListed(stdout, dir)
}

// cacheDirHint names the per-user cache directory for flag help.
func cacheDirHint() string {
	dir, err := pems.CacheDir()
	if err != nil {
		return "(none on this system)"
	}
	return dir
}

// fetchDataset downloads the named dataset into the directory
// fetch.TargetDir(dataFlag) and returns it, writing progress to stderr.
func fetchDataset(ctx context.Context, name, dataFlag, seriesURL string, stderr io.Writer) (string, error) {
	name, err := checkDataset(name)
	if err != nil {
		return "", err
	}
	if seriesURL != "" && fetch.Fetchable(name) {
		return "", badFlags(fmt.Errorf("-url: every file of %s has a known upstream; -url is for the PeMS04 and PeMS08 series", name))
	}
	dir, err := fetch.TargetDir(dataFlag)
	if err != nil {
		return "", err
	}
	f := fetch.Fetcher{Progress: stderr}
	if err := f.Dataset(ctx, dir, name, fetch.Base(), seriesURL); err != nil {
		return "", err
	}
	return dir, nil
}

// listDatasets writes the table of the known datasets: their shape and
// files and, where the data directory dir was found (found), which files
// are missing and whether the present ones match the sums shipped in the
// program (the release's files).
func listDatasets(stdout io.Writer, dir string, found bool) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNODES\tSTEP\tCHANNELS\tSERIES\tGRAPH\tLOCATIONS\tSTATUS")
	for _, info := range pems.Known() {
		status := func(rel string) string {
			switch {
			case rel == "":
				return "-"
			case !found:
				return rel + " (?)"
			case fileExists(filepath.Join(dir, rel)):
				return rel
			}
			return rel + " (missing)"
		}
		verdict := "?"
		if found {
			var err error
			if verdict, err = releaseStatus(dir, info.Name); err != nil {
				return err
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d min\t%v\t%s\t%s\t%s\t%s\n", info.Name, info.Nodes, info.StepMinutes, info.Channels,
			status(info.SeriesFile), status(info.GraphFile), status(info.LocationsFile), verdict)
	}
	return tw.Flush()
}

// releaseStatus says whether the named dataset's files in dir are its
// release's, checked against the sums shipped in the program: "verified"
// ("verified: ASTGCN release" for the PeMS series, known by their git blob
// IDs), "unverified: FILE (sha256 …, want …)" for a file that differs,
// "missing" with how to get what is.
func releaseStatus(dir, name string) (string, error) {
	srcs, err := fetch.Sources(name)
	if err != nil {
		return "", err
	}
	verdict, missing, series := "verified", false, false
	for _, s := range srcs {
		st, err := fetch.Check(filepath.Join(dir, filepath.FromSlash(s.File)), s)
		if err != nil {
			return "", err
		}
		switch st.State {
		case fetch.Missing:
			missing = true
			series = series || !s.Fetchable()
		case fetch.Unverified:
			return fmt.Sprintf("unverified: %s %s", s.File, strings.TrimPrefix(st.String(), "unverified ")), nil
		case fetch.Verified:
			if s.Release != "" {
				verdict = st.Describe(s)
			}
		}
	}
	switch {
	case series:
		return "missing (download the ASTGCN release, or -fetch " + name + " -url URL)", nil
	case missing:
		return "missing (-fetch " + name + ")", nil
	}
	return verdict, nil
}

// verifyListed checks the files dir's SHA256SUMS lists and names the
// known files it does not list.
func verifyListed(stdout io.Writer, dir string) error {
	missing, err := pems.VerifyChecksums(dir)
	if errors.Is(err, iofs.ErrNotExist) && !fileExists(filepath.Join(dir, pems.ChecksumFile)) {
		// A directory of one's own data need not list its sums.
		fmt.Fprintf(stdout, "checksums: no %s in %s: nothing verified\n", pems.ChecksumFile, dir)
		return nil
	}
	if err != nil {
		return err
	}
	unlisted, err := pems.Unlisted(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "checksums: all listed files present match %s", pems.ChecksumFile)
	if len(missing) > 0 {
		fmt.Fprintf(stdout, " (listed but missing: %v)", missing)
	}
	fmt.Fprintln(stdout)
	if len(unlisted) > 0 {
		fmt.Fprintf(stdout, "not verified: %v are not listed in %s\n", unlisted, pems.ChecksumFile)
	}
	return nil
}
