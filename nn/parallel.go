package nn

import (
	"runtime"
	"sync"
)

// minRowsPerWorker keeps small batches on one goroutine, where the cost of
// starting workers would exceed the work.
const minRowsPerWorker = 512

// rowWorkers returns the number of goroutines ParallelRows shares n rows
// among; at most 1 means it calls f on the caller's goroutine. A caller
// on a path that must not allocate (a forecast) calls its function
// directly then, since a closure handed to ParallelRows escapes to the
// heap whether or not a goroutine is started.
func rowWorkers(n int) int {
	return min(runtime.GOMAXPROCS(0), n/minRowsPerWorker)
}

// ParallelRows calls f on disjoint row ranges [lo, hi) covering [0, n), on up
// to GOMAXPROCS goroutines, and returns when all are done. Element-wise
// kernels (activations, gates) use it so that all cores work between the
// matrix products, which Gemm parallelises over rows itself.
func ParallelRows(n int, f func(lo, hi int)) {
	workers := rowWorkers(n)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// ParallelChunks calls f(0) … f(n-1) on up to GOMAXPROCS goroutines and
// returns when all are done.
func ParallelChunks(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}
