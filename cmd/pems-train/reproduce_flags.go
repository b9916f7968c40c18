package main

import (
	"flag"
	"fmt"

	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// reproduceFlags are reproduce's flags.
type reproduceFlags struct {
	fs       *flag.FlagSet
	dataDir  *string
	datasets *string
	seeds    *string
	merge    *string
	quick    *bool
	out      *string
	floor    *float64
	sel      *string
	jsonLogs *bool
	scale    *int
	sEpochs  *int
	thEvery  *int
	bEvery   *int
	keepSelf *bool
	blEpochs *int
	tEpochs  *int
	patience *int
	tSelect  *string
	noise    *float64
	splitBy  *string
	split    *string
	prepName *string
	aware    *bool
	maskIn   *bool
	gate     *bool
	silentW  *bool
	trainOut *string
	outage   *string
	steps    *int
}

// addReproduceFlags defines reproduce's flags on fs.
func addReproduceFlags(fs *flag.FlagSet) reproduceFlags {
	return reproduceFlags{
		fs:       fs,
		dataDir:  fs.String("data", "", dataDirUsage),
		datasets: fs.String("dataset", "", "dataset, or comma-separated datasets (rows of the table); required"),
		seeds:    fs.String("seeds", "", "seeds: N for 1..N, A-B for A..B, or a list A,B,… (default 10, or 1 with -quick); run seeds apart and -merge their tables"),
		merge:    fs.String("merge", "", "comma-separated table JSON files of one comparison run over different seeds: write their merged table to -out as table*-merged instead of training"),
		quick:    fs.Bool("quick", false, fmt.Sprintf("short training and schedules, one seed, the first %d steps of each series (see -steps): under a minute on SZ-taxi and about 4 at PeMS04's size on 2 cores", reproduce.QuickSteps)),
		out:      fs.String("out", "runs/reproduce", "directory for the tables (Markdown and JSON) and, under models/, the teachers, their training states and the SDGNN bundles: a run stopped midway resumes from them"),
		floor:    fs.Float64("mape-floor", 0, "leave truths below this value out of MAPE (not MAE/RMSE); 1 for SZ-taxi"),
		sel:      fs.String("select", "", "validation metric for selecting checkpoints: mape or mae (default mape)"),
		jsonLogs: fs.Bool("log-json", false, "log JSON lines instead of text"),
		scale:    fs.Int("schedule-scale", 1, "shorten SDGNN's reference schedule (Θ every 40, budget −1 every 100 epochs, 4100 epochs) this many times"),
		sEpochs:  fs.Int("sdgnn-epochs", 0, "SDGNN Phase-φ epochs (overrides the schedule's)"),
		thEvery:  fs.Int("theta-every", 0, "epochs between Phase-Θ solves (overrides the schedule's)"),
		bEvery:   fs.Int("budget-every", 0, "epochs per budget decrement (overrides the schedule's)"),
		keepSelf: fs.Bool("keep-self", sdgnn.DefaultConfig().KeepSelf, "keep every node in its own SDGNN receptive set, unpenalised, LARS choosing the other budget−1; -keep-self=false for the paper's plain path, which can leave a node out of its own set"),
		blEpochs: fs.Int("baseline-epochs", 0, "student epochs of the distilled baselines (default 100, 20 with -quick)"),
		tEpochs:  fs.Int("teacher-epochs", 0, "teachers' (GRU-GCN and GRU) most epochs (default 500, 8 with -quick); a saved teacher is reused if trained with the same, or stopped early within it; an unfinished one (its .state) resumes under a cap raised since"),
		patience: fs.Int("patience", 0, "teachers' early-stopping patience in epochs without a better validation score (see -teacher-select; default 30)"),
		tSelect:  fs.String("teacher-select", "mae", "validation score that picks the teachers' best epoch: mae or scaled (see teacher -select); a reused teacher must have been trained with the same"),
		noise:    fs.Float64("noise", -1, "std of the GRU-GCN teacher's training noise between GCN and decoder (-1: dataset default, 0.01 PeMS04 and SZ-taxi, 0.05 PeMS08)"),
		splitBy:  fs.String("split-by", snapshot.ByTime, "what the split divides: time (consecutive ranges) nodes (Gao & Ribeiro's transductive split: every snapshot, sensors dealt round-robin by degree, each model trained and scored on its part's sensors) or windows (their inductive split: snapshots dealt round-robin in time order, every sensor); tables are written as table*-nodes and table*-windows"),
		split:    fs.String("split", "", "train,val,test ratios (default 6,2,2 by time, 7,1,2 by nodes or windows)"),
		prepName: fs.String("prep", string(snapshot.PrepStandard), "input preprocessing of every model: standard or paper (Gao & Ribeiro's min-max inputs with minute-of-day and day-of-week inputs); paper tables are written as table-paper*"),
		aware:    fs.Bool("aware", false, "train every model for missing readings: -mask-input -gate -train-outage train -silent-weights together (off: the paper's protocol)"),
		maskIn:   fs.Bool("mask-input", false, "give every model's GRU a missing mark per channel beside each reading"),
		gate:     fs.Bool("gate", false, "gate the GRU-GCN's skip by the node's own embedding, so that a node silent for its whole window can be forecast from its neighbours"),
		silentW:  fs.Bool("silent-weights", false, "fit SDGNN a second set of weights over each sensor's receptive nodes, used when its own window is empty (needs -mask-input)"),
		trainOut: fs.String("train-outage", snapshot.OutageOff, "train the teachers under simulated outages drawn anew each epoch, and distil the students on training targets computed under one draw: off, train (share=0.1,len=1-12) or share=S,len=L[:L…] (each seed draws with its own seed)"),
		outage:   fs.String("outage", snapshot.OutageOff, "also score every model under simulated outages: off, standard (share=0.1,len=1:3:6:12,seed=1) or share=S,len=L[:L…],seed=N; each length a pass with the same sensors of each test snapshot silenced for their last L readings, truths kept (changes no model)"),
		steps:    fs.Int("steps", 0, fmt.Sprintf("use only the first N steps of each series (0: all; default %d with -quick, two weeks of PeMS); tables and models of a run with -steps are written as table*-stepsN and models*-stepsN", reproduce.QuickSteps)),
	}
}
