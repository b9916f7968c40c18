//go:build race

package stream

// raceEnabled reports whether the tests run under the race detector, for
// the tests that repeat a long run fewer times there.
const raceEnabled = true
