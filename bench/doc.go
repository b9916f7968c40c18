// Package bench holds the benchmarks that compare the project's inference
// paths with each other on the real road graphs: SDGNN's per-node forecast
// from cached embeddings, the same computing its receptive nodes' GRU
// windows cold, and the GRU-GCN teacher for one node (its exact 2-hop
// receptive field) and for the whole graph. Run them on one core, the
// paper's protocol:
//
//	go test -run xxx -bench 'SDGNN|GRUGCN' -cpu 1 -benchtime 10000x ./bench
//
// BenchmarkScaling and BenchmarkScalingWholeGraph repeat them on tiled
// copies of the graph up to 10⁵ nodes (see their comments for commands).
//
// They need the PeMS04 road graph from the data directory (see
// datasets/pems); the readings are random, which changes no cost.
package bench
