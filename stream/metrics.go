package stream

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pemsforecast/sdgnn/evaluation"
)

// Counters are the service's metrics. All fields are atomic, so they may be
// read (WritePrometheus) while the state goroutine updates them.
//
// Applied counts readings that changed a window (advanced, filled or
// completed); OutOfOrder is the filled part of them, Completed the
// completed part (see Complement). Duplicates, Conflicts and Late
// readings changed nothing. Gaps counts skipped slots. Rejected counts
// refused messages by reason (index as in Reasons); whoever dead-letters a
// message calls Reject, State.Apply does not. Emitted, Stale (emitted with
// StaleSlots > 0) and Skipped (forecast slots of a node never emitted
// because an input ran more than the history ahead, counted from the slot
// after the first one all its inputs have) are counted by Emitter.Emit.
type Counters struct {
	Applied, Duplicates, Conflicts, OutOfOrder, Late, Gaps atomic.Uint64
	Completed                                              atomic.Uint64
	Rejected                                               [len(Reasons)]atomic.Uint64
	Internal                                               atomic.Uint64 // refusals that are not RejectErrors
	Emitted, Stale, Skipped                                atomic.Uint64
	// HTTPBusy counts API requests answered 503 because more were being
	// served at once than Config.HTTPMaxConcurrent allows.
	HTTPBusy atomic.Uint64
	// SkippedAtMs is when (Unix ms, wall clock) the Service last found
	// forecast slots skipped (Emitter.Skips), 0 if never: an alert can
	// ask how recent.
	SkippedAtMs atomic.Int64
	// Partial counts forecasts emitted with some input window holding
	// slots without a reading (Input.Gaps > 0).
	Partial atomic.Uint64
	// NonFinite counts forecast slots passed by because the model's
	// forecast was NaN or infinite (see ErrNonFinite).
	NonFinite               atomic.Uint64
	Reloads, ReloadFailures atomic.Uint64 // Service.Reload
	// CredentialReloadFailures counts reloads of a certificate or of the
	// Kafka credentials that were refused (a file that does not read),
	// the ones in use kept: counted by the caller that reloads them, so
	// that a rotation gone wrong is alerted on before the old ones expire.
	CredentialReloadFailures atomic.Uint64
	// FetchErrors counts fetches of readings that failed (the consumer
	// retries); FlushRetries counts batches whose writes, state save or
	// commit failed and were tried again.
	FetchErrors, FlushRetries atomic.Uint64
	// Batches counts the batches committed (forecasts written, state
	// saved, offsets committed) and BatchMessages the readings topic's
	// messages among them, so that their ratio is the mean batch: it
	// grows while a backlog flows (see Service.Run).
	Batches, BatchMessages atomic.Uint64
	// Rebuilds counts the times the state was rebuilt from the log as the
	// service began to hold the partitions (see Config.NoRebuild),
	// RebuildFailures those that failed, and Rebuilt the readings those
	// rebuilds applied.
	Rebuilds, RebuildFailures, Rebuilt atomic.Uint64
	// TxnCommits and TxnAborts count the transaction markers met in the
	// readings topic (see TxnMarker): neither readings nor rejected.
	// TxnAborted counts the readings of aborted transactions left out,
	// TxnChecks the stretches of transactional partitions fetched again to
	// tell them (see Service.abortedIn) and TxnUnchecked the readings of
	// such partitions applied without that check (read before the
	// partition's first marker, or the fetch failed).
	TxnCommits, TxnAborts, TxnAborted, TxnChecks, TxnUnchecked atomic.Uint64

	// ForecastLatency is for the caller to observe the time from a
	// reading's arrival to its forecasts' hand-off.
	ForecastLatency Histogram
	// EmitDelay is observed by Emit: emission time minus the forecast
	// slot's start (the end of the newest input slot).
	EmitDelay Histogram

	// Completeness counts the forecasts emitted by how complete their
	// inputs were, as the offline breakdown (evaluation.Stratify) classes
	// them: [own class][others], the own class that of the slots of the
	// sensor's own window before the forecast slot without a reading
	// (evaluation.OwnClass, OwnComplete to OwnWhole), others 1 where
	// another receptive sensor's window lacked a reading (missing, not
	// received, or ending before that slot: evaluation.OthersIncompleteFor)
	// and 0 where none did. Counted by Emitter.Emit.
	Completeness [evaluation.OwnClasses][2]atomic.Uint64
	window       int // the model's window, which the classes' edges depend on; set by NewState
}

// countCompleteness counts one forecast emitted whose own window had own
// slots without a reading, others telling whether another receptive
// sensor's window lacked one.
func (c *Counters) countCompleteness(own int, others bool) {
	j := 0
	if others {
		j = 1
	}
	c.Completeness[evaluation.OwnClass(own, c.window)][j].Add(1)
}

// writeCompleteness writes Completeness as
// forecasts_by_completeness_total{own=…,receptive=…}, own labelled by
// evaluation.OwnClassLabel, only the classes a window of the model's
// length can fall in; nothing for counters of no model.
func (c *Counters) writeCompleteness(w io.Writer) {
	if c.window < 1 {
		return
	}
	name := metricPrefix + "forecasts_by_completeness_total"
	var labels []string
	for own := range c.Completeness {
		if l := evaluation.OwnClassLabel(own, c.window); l != "" {
			labels = append(labels, l)
		}
	}
	fmt.Fprintf(w, "# HELP %s Forecasts emitted by the slots of the sensor's own %d-slot window without a reading (own: %s) and whether another receptive sensor's window lacked one (receptive).\n# TYPE %s counter\n",
		name, c.window, strings.Join(labels, ", "), name)
	completenessClasses(c.window, func(own int, ownLabel string, others int, receptive string) {
		fmt.Fprintf(w, "%s{own=%q,receptive=%q} %d\n", name, ownLabel, receptive, c.Completeness[own][others].Load())
	})
}

// completenessClasses calls f with each completeness class a window of
// that length can fall in, in order: the own-window class own
// (evaluation.OwnClass) and its label (evaluation.OwnClassLabel), others
// 0 where every other receptive window was complete and 1 where not, and
// its label (evaluation.OthersComplete, OthersIncomplete).
func completenessClasses(window int, f func(own int, ownLabel string, others int, receptive string)) {
	receptive := [2]string{evaluation.OthersComplete, evaluation.OthersIncomplete}
	for own := range evaluation.OwnClasses {
		label := evaluation.OwnClassLabel(own, window)
		if label == "" {
			continue
		}
		for j, r := range receptive {
			f(own, label, j, r)
		}
	}
}

// Reject counts a refused message by the reason of err (Internal when err is
// not a RejectError).
func (c *Counters) Reject(err error) {
	r := ReasonOf(err)
	for i, name := range Reasons {
		if name == r {
			c.Rejected[i].Add(1)
			return
		}
	}
	c.Internal.Add(1)
}

// LatencyBucketsMicros are the histogram bucket bounds in microseconds,
// 1-2-5 steps from 1 µs to 100 s: fixed, so that series from different
// processes and versions can be aggregated.
var LatencyBucketsMicros = [...]int64{
	1, 2, 5, 10, 20, 50, 100, 200, 500,
	1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5,
	1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8,
}

// Histogram is a latency histogram with the fixed LatencyBucketsMicros
// bounds; the zero value is ready to use and Observe is lock-free and
// allocation-free.
type Histogram struct {
	counts [len(LatencyBucketsMicros) + 1]atomic.Uint64 // last: +Inf
	sumNs  atomic.Int64
	n      atomic.Uint64
}

// Observe records one duration (negative ones count as zero).
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++ // bounds are inclusive upper bounds: round up
	}
	i := 0
	for i < len(LatencyBucketsMicros) && us > LatencyBucketsMicros[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
	h.n.Add(1)
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 { return h.n.Load() }

// Mean returns the mean observation (0 with none).
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sumNs.Load() / int64(n))
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q ≤ 1): an upper estimate at the buckets' resolution, as Prometheus's
// histogram_quantile would interpolate within it. With no observations it
// returns 0; beyond the last bound, +Inf is reported as the last bound.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		if cum >= rank {
			if i == len(LatencyBucketsMicros) {
				i--
			}
			return time.Duration(LatencyBucketsMicros[i]) * time.Microsecond
		}
	}
	return time.Duration(LatencyBucketsMicros[len(LatencyBucketsMicros)-1]) * time.Microsecond
}

const metricPrefix = "sdgnn_stream_"

// promLabel escapes v as a label value of the Prometheus text format,
// which knows only \\, \" and \n (Go's %q would write \t or \u00a0, and
// the whole scrape would fail to parse).
var promLabel = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace

// WritePrometheus writes the counters in the Prometheus text exposition
// format (version 0.0.4); histograms are in seconds, as Prometheus
// recommends.
func (c *Counters) WritePrometheus(w io.Writer) error {
	bw := bufio.NewWriter(w)
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(bw, "# HELP %s%s %s\n# TYPE %s%s counter\n%s%s %d\n", metricPrefix, name, help, metricPrefix, name, metricPrefix, name, v)
	}
	counter("readings_applied_total", "Readings that advanced or filled a window.", c.Applied.Load())
	counter("readings_duplicate_total", "Readings repeating a slot with the same values.", c.Duplicates.Load())
	counter("readings_conflict_total", "Readings repeating a slot with other values (first kept).", c.Conflicts.Load())
	counter("readings_out_of_order_total", "Readings that filled a missing slot inside the window.", c.OutOfOrder.Load())
	counter("readings_completed_total", "Readings that gave a slot held with missing values (0) those values, the others agreeing.", c.Completed.Load())
	counter("readings_late_total", "Readings older than the window, dropped.", c.Late.Load())
	counter("gap_slots_total", "Slots skipped when a window advanced, fed as missing.", c.Gaps.Load())
	fmt.Fprintf(bw, "# HELP %sreadings_rejected_total Messages refused, by reason.\n# TYPE %sreadings_rejected_total counter\n", metricPrefix, metricPrefix)
	for i, r := range Reasons {
		fmt.Fprintf(bw, "%sreadings_rejected_total{reason=%q} %d\n", metricPrefix, r, c.Rejected[i].Load())
	}
	fmt.Fprintf(bw, "%sreadings_rejected_total{reason=\"internal\"} %d\n", metricPrefix, c.Internal.Load())
	counter("forecasts_emitted_total", "Forecasts emitted.", c.Emitted.Load())
	counter("forecasts_stale_total", "Forecasts emitted at the deadline with lagging inputs.", c.Stale.Load())
	counter("forecasts_partial_total", "Forecasts emitted with some input window holding slots without a reading (before the sensor's first reading, skipped, or all values 0).", c.Partial.Load())
	c.writeCompleteness(bw)
	counter("forecast_slots_skipped_total", "Forecast slots never emitted because an input ran more than the history ahead.", c.Skipped.Load())
	fmt.Fprintf(bw, "# HELP %sforecast_slots_skipped_last_timestamp_seconds When a forecast slot was last skipped (Unix seconds; 0: never).\n# TYPE %sforecast_slots_skipped_last_timestamp_seconds gauge\n%sforecast_slots_skipped_last_timestamp_seconds %g\n",
		metricPrefix, metricPrefix, metricPrefix, float64(c.SkippedAtMs.Load())/1000)
	counter("http_busy_total", "API requests answered 503 Service Unavailable: more were served at once than -http-max-concurrent allows, for a second.", c.HTTPBusy.Load())
	counter("forecasts_non_finite_total", "Forecast slots passed by because the model's forecast was NaN or infinite.", c.NonFinite.Load())
	counter("model_reloads_total", "Models replaced while serving (Service.Reload, SIGHUP).", c.Reloads.Load())
	counter("model_reload_failures_total", "Model reloads refused (unreadable or incompatible bundle); the model served was kept.", c.ReloadFailures.Load())
	counter("credential_reload_failures_total", "Reloads of the HTTPS certificate or the Kafka credentials refused (a file that does not read); those in use were kept.", c.CredentialReloadFailures.Load())
	counter("fetch_errors_total", "Fetches of readings that failed, the broker unreachable or refusing; the consumer retries.", c.FetchErrors.Load())
	counter("flush_retries_total", "Batches whose forecast or dead-letter writes, state save or offset commit failed and were tried again.", c.FlushRetries.Load())
	counter("batches_committed_total", "Batches committed: their forecasts and dead letters written, the state saved, their offsets committed.", c.Batches.Load())
	counter("batch_messages_committed_total", "Messages of the readings topic whose offsets those batches committed (over batches_committed_total: the mean batch).", c.BatchMessages.Load())
	counter("rebuilds_total", "Times the windows were rebuilt from the readings and forecasts topics as the service began to hold the partitions.", c.Rebuilds.Load())
	counter("rebuild_failures_total", "Rebuilds from the log that failed; the service went on with the state it had.", c.RebuildFailures.Load())
	counter("rebuilt_readings_total", "Readings read back from the readings topic that a rebuild applied to the windows.", c.Rebuilt.Load())
	counter("readings_aborted_total", "Readings of aborted transactions, left out.", c.TxnAborted.Load())
	counter("transaction_checks_total", "Stretches of transactional readings partitions fetched again, read committed, to tell the readings of aborted transactions.", c.TxnChecks.Load())
	counter("readings_unchecked_total", "Readings of transactional partitions applied without that check: read before the partition's first marker, or the fetch failed.", c.TxnUnchecked.Load())
	fmt.Fprintf(bw, "# HELP %stransaction_markers_total Transaction markers met in the readings topic, by kind.\n# TYPE %stransaction_markers_total counter\n", metricPrefix, metricPrefix)
	fmt.Fprintf(bw, "%stransaction_markers_total{kind=\"commit\"} %d\n", metricPrefix, c.TxnCommits.Load())
	fmt.Fprintf(bw, "%stransaction_markers_total{kind=\"abort\"} %d\n", metricPrefix, c.TxnAborts.Load())
	c.ForecastLatency.write(bw, metricPrefix+"forecast_latency_seconds", "Time from a reading's arrival to its forecasts' hand-off.")
	c.EmitDelay.write(bw, metricPrefix+"emit_delay_seconds", "Emission time after the start of the forecast slot.")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write prometheus metrics: %w", err)
	}
	return nil
}

func (h *Histogram) write(w *bufio.Writer, name, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range LatencyBucketsMicros {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(float64(b)/1e6, 'g', -1, 64), cum)
	}
	cum += h.counts[len(LatencyBucketsMicros)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(float64(h.sumNs.Load())/1e9, 'g', -1, 64))
	fmt.Fprintf(w, "%s_count %d\n", name, cum)
}
