package snapshot

// Missing reports whether reading v is missing: exactly 0 (how the
// datasets and the streaming service mark a reading not received) or not
// finite. A missing reading enters a model as a reading of 0 would
// (Normalizer.Input) and, where the normaliser has missing marks
// (Normalizer.Mask), with its mark set.
func Missing(v float64) bool { return !valid(v) }

// StepInputs writes into dst, of n.Inputs() values, the model inputs of
// one step of a sensor's window: the normalised readings of its channels
// (Input), the calendar inputs of the step's time ms (Unix milliseconds)
// where n has them, then, where n.Mask, one mark per channel, 1 for a
// missing reading and 0 for a present one. readings holds the step's
// readings on the original scale, one per channel. missing, when not nil,
// marks the readings to take as missing whatever their value (a sensor
// silenced by a simulated outage, say); nil marks those Missing reports.
// A reading marked missing enters as 0 would.
//
// It is the one definition of a step's inputs: the offline batches
// (Set.Fill) and the streaming service's windows (sdgnn.Bundle.EmbedBatch)
// both give these values, bit for bit, so that a window forecast online
// is the one scored offline. ms is not read where n has no calendar
// inputs.
func (n Normalizer) StepInputs(dst, readings []float64, missing []bool, ms int64) {
	c := len(n.Mean)
	for ch, v := range readings[:c] {
		if missing != nil && missing[ch] {
			v = 0
		}
		dst[ch] = n.Input(v, ch)
	}
	at := c
	if n.Time != nil {
		n.Time.At(dst[at:at+TimeInputCount], ms)
		at += TimeInputCount
	}
	if !n.Mask {
		return
	}
	for ch, v := range readings[:c] {
		m := Missing(v)
		if missing != nil {
			m = m || missing[ch]
		}
		dst[at+ch] = mark(m)
	}
}

// mark is the input of a missing mark: 1 for missing, 0 for present.
func mark(missing bool) float64 {
	if missing {
		return 1
	}
	return 0
}

// SlotMissing reports whether a step of a window is missing: every one of
// its readings (one per channel) is Missing. It is how a window's gaps are
// counted offline (Set.Gaps) and online (the streaming service's Input.Gaps).
func SlotMissing(readings []float64) bool {
	for _, v := range readings {
		if !Missing(v) {
			return false
		}
	}
	return true
}

// WindowGaps returns the number of missing steps of a window (T steps ×
// channels readings, oldest first, as SlotMissing counts them) and how many
// of them end it: the length of the outage the sensor is in at the
// window's end, 0 when its last step has a reading, T when no step has.
// silenced, when positive, takes the window's last silenced steps as
// missing whatever they hold, as a simulated outage does (Silence).
func WindowGaps(window []float64, channels, silenced int) (missing, trailing int) {
	t := len(window) / channels
	run := true
	for j := t - 1; j >= 0; j-- {
		gap := j >= t-silenced || SlotMissing(window[j*channels:(j+1)*channels])
		if gap {
			missing++
			if run {
				trailing++
			}
		} else {
			run = false
		}
	}
	return missing, trailing
}
