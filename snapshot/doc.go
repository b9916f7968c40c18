// Package snapshot turns a multivariate traffic series into the
// sliding-window snapshots used to train and evaluate a graph recurrent
// forecaster, and stores snapshots, embeddings and predictions as Arrow IPC
// (Feather v2) files.
//
// A series has Steps time steps, Nodes sensors and Channels readings per
// sensor, stored row-major so that the reading of channel c at node i and
// step t is data[(t*Nodes+i)*Channels+c]. A reading of exactly 0 means the
// value is missing.
//
// Snapshot s (0-based) is the input window of steps [s, s+Window) for every
// node and channel together with the target at step s+Window, so a series
// has Steps-Window snapshots. Snapshots are split into training,
// validation and test parts by time (ChronoSplit), by nodes (NodeSplit) or
// by windows (WindowSplit), and a Normalizer is fitted on the training
// part's readings only (Split.FitData): under a time or node split no
// validation or test reading enters the scaling; under a split by windows,
// whose parts interleave, the steps fitted on are read by validation and
// test snapshots too, as in Gao & Ribeiro's code.
//
// A missing reading (0) enters a model as a reading of 0 would, with a
// missing mark beside it where the normaliser has marks (StepInputs, the
// one definition offline and online). Outage scenarios (Outage) silence
// sensors of a Set's windows (Set.Silenced) to score or train models on
// sensors fallen silent, and Set.Completeness gives evaluation.Stratify
// how complete each forecast's inputs were.
//
// Windows, splits, normalisation and the Arrow files take the raw series
// fields rather than a type of a dataset package; only Prepare and its kin,
// which load a dataset from the data directory, use datasets/pems. The
// package knows nothing of models or Kafka (checkpoint only writes its
// files atomically).
package snapshot
