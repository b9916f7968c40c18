// Package fetch downloads the known datasets' files from their public
// upstream repositories, pinned to the commits that
// shared/datasets/README.md names, and checks every file against the sums
// this package ships: SHA-256 for the files it downloads, the git blob ID
// for the PeMS04 and PeMS08 series of the ASTGCN release, which users
// download themselves.
//
// A download is written to NAME.part beside its target, verified, then
// renamed into place, so that a target file is either absent or whole. An
// interrupted download resumes from its .part with an HTTP Range request
// where the server honours it, and restarts from the beginning where it
// does not. A transfer that stalls is given up after Fetcher.Stall and
// resumed up to Fetcher.Retries times.
//
// The upstream base URL, https://raw.githubusercontent.com, can be
// replaced by a mirror that serves the same paths,
// MIRROR/OWNER/REPO/COMMIT/PATH, with the environment variable
// PEMS_DATA_MIRROR (EnvMirror): for a local copy, and for the tests,
// which serve the shared data directory from an httptest server.
package fetch
