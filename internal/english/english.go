// Package english words counts in the messages a person reads: "1
// channel" rather than "1 channels".
package english

import "strconv"

// Count returns n followed by noun, made plural unless n is 1 or -1:
// "1 channel", "0 channels", "3 channels". noun is a singular noun whose
// plural adds an s, as "node", "snapshot" and "epoch".
func Count(n int, noun string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
