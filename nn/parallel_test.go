package nn

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestParallelCoversOnce checks that ParallelRows hands out every row of
// [0, n) exactly once and ParallelChunks every chunk index exactly once,
// for batches below, at and above the sizes that start goroutines, on one
// core and on several.
func TestParallelCoversOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 7, minRowsPerWorker - 1, 2 * minRowsPerWorker, 3*minRowsPerWorker + 5, 10 * minRowsPerWorker} {
			rows := make([]atomic.Int32, n)
			ParallelRows(n, func(lo, hi int) {
				if lo < 0 || hi > n || lo > hi {
					t.Errorf("procs %d, n %d: range [%d, %d)", procs, n, lo, hi)
					return
				}
				for i := lo; i < hi; i++ {
					rows[i].Add(1)
				}
			})
			chunks := make([]atomic.Int32, n)
			ParallelChunks(n, func(i int) { chunks[i].Add(1) })
			for i := range rows {
				if r, c := rows[i].Load(), chunks[i].Load(); r != 1 || c != 1 {
					t.Errorf("procs %d, n %d: row %d handed out %d times, chunk %d %d times", procs, n, i, r, i, c)
					break
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}
