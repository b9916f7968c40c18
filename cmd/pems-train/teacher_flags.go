package main

import (
	"flag"
	"fmt"

	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// teacherFlags are teacher's flags; tc holds the training's (-epochs,
// -lr...) over teacher.DefaultTrain.
type teacherFlags struct {
	fs        *flag.FlagSet
	dataDir   *string
	dataset   *string
	kind      *string
	out       *string
	resume    *string
	window    *int
	hidden    *int
	layers    *int
	noise     *float64
	split     *string
	splitBy   *string
	steps     *int
	prepName  *string
	linksName *string
	seed      *uint64
	jsonLogs  *bool
	evalChunk *int
	mapeFloor *float64
	maskIn    *bool
	gate      *bool
	trainOut  *string
	tc        *teacher.TrainConfig
	selectBy  *string
}

// addTeacherFlags defines teacher's flags on fs.
func addTeacherFlags(fs *flag.FlagSet) teacherFlags {
	tc := teacher.DefaultTrain()
	f := teacherFlags{
		fs:        fs,
		dataDir:   fs.String("data", "", dataDirUsage),
		dataset:   fs.String("dataset", "", "dataset name: pems04, pems08, sz-taxi or los-loop (required unless -resume)"),
		kind:      fs.String("model", teacher.KindGRUGCN, "model: gru-gcn (teacher) or gru (baseline without graph)"),
		out:       fs.String("out", "", "model file to write (default runs/DATASET-MODEL.model)"),
		resume:    fs.String("resume", "", "training-state file to resume (written on Ctrl-C)"),
		window:    fs.Int("window", 12, "input window T in steps"),
		hidden:    fs.Int("hidden", 16, fmt.Sprintf("hidden width d of GRU, GCN and decoder (at most %d)", maxWidth)),
		layers:    fs.Int("layers", teacher.DefaultLayers, "graph convolutions in the GRU-GCN's GCN: 2 (the paper's teacher) or 1 (each node's Z then mixes only its 1-hop neighbours); ignored for -model gru"),
		noise:     fs.Float64("noise", -1, "std of the Gaussian noise between GCN and decoder in training (-1: dataset default, 0.01 PeMS04 and SZ-taxi, 0.05 PeMS08)"),
		split:     fs.String("split", "", "train,val,test ratios (default 6,2,2 by time, 7,1,2 by nodes or windows)"),
		splitBy:   fs.String("split-by", snapshot.ByTime, "what the split divides: time (consecutive ranges of snapshots, every sensor scored) nodes (Gao & Ribeiro's transductive split: every snapshot, sensors dealt round-robin by degree, loss and metrics on the part's sensors) or windows (their inductive split: snapshots dealt round-robin in time order, every sensor)"),
		steps:     fs.Int("steps", 0, "use only the first N steps of the series (0: all); distill, eval and export then use the same part through the model's split"),
		prepName:  fs.String("prep", string(snapshot.PrepStandard), "input preprocessing: standard (z-score of the readings) or paper (Gao & Ribeiro's: min-max scaled readings plus minute-of-day and day-of-week inputs)"),
		linksName: fs.String("links", "", "how the GCN weighs the road links: links (every link 1), weights (a weighted graph's own weights: los-loop's), or empty for the dataset's default (los-loop: "+losLoopLinks()+"; PeMS under -prep paper: scaled distances; otherwise links); recorded in the model"),
		seed:      fs.Uint64("seed", 1, "seed of initialisation, shuffling and noise"),
		jsonLogs:  fs.Bool("log-json", false, "log JSON lines instead of text"),
		evalChunk: fs.Int("chunks", 10, "chronological chunks of the test split in the final report (at most one a snapshot: more are cut to that)"),
		mapeFloor: fs.Float64("mape-floor", 0, "leave truths below this value out of MAPE in the epochs' log and the final report (not out of MAE/RMSE)"),
		maskIn:    fs.Bool("mask-input", false, "give the GRU a missing mark per channel beside each reading (off: missing readings enter as zeros, as in the paper)"),
		gate:      fs.Bool("gate", false, "gate the GRU-GCN's skip by the node's own embedding, so that a node silent for its whole window can be forecast from its neighbours' embeddings"),
		trainOut:  fs.String("train-outage", snapshot.OutageOff, "train under simulated outages drawn anew each epoch: off, train (share=0.1,len=1-12) or share=S,len=L[:L…],seed=N"),
	}
	f.tc = &tc
	fs.IntVar(&tc.MaxEpochs, "epochs", tc.MaxEpochs, "maximum epochs")
	fs.IntVar(&tc.Patience, "patience", tc.Patience, "early-stopping patience in epochs without a better validation score (see -select)")
	fs.IntVar(&tc.BatchSize, "batch", tc.BatchSize, "snapshots per batch")
	fs.Float64Var(&tc.LR, "lr", tc.LR, "Adam learning rate")
	fs.Float64Var(&tc.WeightDecay, "weight-decay", tc.WeightDecay, "L2 weight decay")
	fs.Float64Var(&tc.ClipNorm, "clip", tc.ClipNorm, "gradient-norm clipping threshold (0: off)")
	fs.StringVar(&tc.Loss, "loss", tc.Loss, "training loss: mae or mse (masked, normalised scale)")
	fs.IntVar(&tc.MaxBatches, "max-batches", 0, "cap on training batches per epoch (0: all; for quick runs)")
	f.selectBy = fs.String("select", "mae", "validation score that picks the best epoch and stops early: mae (MAE on the original scale) or scaled (the mean over channels of each channel's MAE over its scale: PeMS's three channels count alike)")
	return f
}
