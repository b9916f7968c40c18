// Package pems reads traffic datasets in the layout of the public PeMS
// release (Guo et al., AAAI 2019, ASTGCN): a NumPy .npz series with one
// array "data" of shape (steps, sensors, channels) and a road graph, either
// an edge list "from,to,cost" (PeMS04, PeMS08) or a square adjacency matrix
// (SZ-taxi, from the T-GCN release); and Los-loop as the T-GCN release
// ships it: a CSV speed table whose header names the sensors, a weighted
// adjacency matrix and the sensors' locations.
//
// It also builds the GCN-normalised adjacency of a graph as a sparse CSR
// matrix with an allocation-free block product for graph convolutions over
// many snapshots, finds the shared data directory and verifies its
// checksums.
package pems
