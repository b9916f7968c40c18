package stream

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// forecastsQuery parses the query of GET /forecasts or /forecast/{sensor}
// (n sensors), whose parameters are those known. A query that does not
// parse is refused, not read in part: URL.Query would drop the pair it
// cannot read (sensors=12;3), and answer for every sensor. Nor is a
// parameter given twice read from its first value alone
// (?sensors=1&sensors=2 answered sensor 1), nor one it does not know
// ignored (?sensor=3 answered every sensor, ?format=csv on
// /forecast/{sensor} JSON), nor one without a value read as absent
// (?sensors= answered every sensor).
func forecastsQuery(raw string, names *pems.SensorNames, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", raw, err)
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vs := q[name]
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown parameter %q: want %s", name, strings.Join(known, ", "))
		}
		if len(vs) > 1 {
			return nil, fmt.Errorf("%s: given %d times (%q); give it once (sensors: ids separated by commas)", name, len(vs), vs)
		}
		if strings.TrimSpace(vs[0]) == "" {
			return nil, fmt.Errorf("%s: empty: want %s, or leave %s out", name, forecastsParamWant(name, names), name)
		}
	}
	return q, nil
}

// sinceParam parses the since parameter of GET /forecasts, v: a slot
// time, Unix ms or RFC 3339; "" is every slot (math.MinInt64).
func sinceParam(v string) (int64, error) {
	if v == "" {
		return math.MinInt64, nil
	}
	since, err := ParseTS(v)
	if err != nil {
		if hint := zonePlusHint(v); hint != "" {
			err = errors.New(hint)
		}
		return 0, fmt.Errorf("since: %v", err)
	}
	// No forecast is of a slot before 1970 or after 9999 (the
	// Validator refuses such readings): a since out there, a
	// time in µs or ns say, would answer nothing for good.
	if since < 0 || since > MaxTS {
		return 0, fmt.Errorf("since: %q is outside 1970 to 9999 (Unix ms, want 0..%d; µs or ns?)", v, MaxTS)
	}
	return since, nil
}

// zonePlusHint says, of a since value that is RFC 3339 once its space is
// read as a plus sign, why it was refused and what to write: a "+" in a
// URL query stands for a space, so a zone offset such as +08:00 written
// into the URL as it is (Shenzhen's time, say) arrives as " 08:00". It
// returns "" for any other value.
func zonePlusHint(v string) string {
	i := strings.LastIndexByte(v, ' ')
	if i < 0 {
		return ""
	}
	if _, err := time.Parse(time.RFC3339Nano, v[:i]+"+"+v[i+1:]); err != nil {
		return ""
	}
	return fmt.Sprintf(`%q is RFC 3339 only with its space read as "+": a "+" in a URL query stands for a space; write the zone %q as %q`,
		v, "+"+v[i+1:], "%2B"+v[i+1:])
}

// forecastsParamWant says what GET /forecasts wants in its parameter
// name, for a model whose sensors names names.
func forecastsParamWant(name string, names *pems.SensorNames) string {
	switch name {
	case "sensors":
		if names.HasIDs() {
			return "sensor IDs separated by commas"
		}
		return fmt.Sprintf("sensor ids 0..%d separated by commas", names.Len()-1)
	case "since":
		return "a slot time, Unix ms or RFC 3339"
	case "format":
		return "json or csv"
	}
	return "a value"
}

// parseSensor returns the index of the sensor a URL names, as the
// readings' keys write it: its ID where the model has IDs, else its index
// in decimal digits without a sign or a leading zero ("0", "12"). "+1",
// "012" and "-0", which strconv.Atoi takes, are not indices: a URL names
// a sensor one way only (pems.SensorNames.Index).
func parseSensor(s string, names *pems.SensorNames) (int, bool) {
	return names.Index(s)
}

// unknownSensorText says that a URL's sensor s is none of the model's,
// and what it wants.
func unknownSensorText(s string, names *pems.SensorNames) string {
	if names.HasIDs() {
		return fmt.Sprintf("unknown sensor %q: want one of the model's %s", s, names.Describe())
	}
	return fmt.Sprintf("unknown sensor %q: want 0..%d", s, names.Len()-1)
}

// sensorList parses the sensors parameter of GET /forecasts: sensors
// named as parseSensor takes them, separated by commas, kept in the order
// given, once each. An empty list is nil: every sensor (GET /forecasts
// refuses an empty parameter before it gets here).
func sensorList(list string, names *pems.SensorNames) ([]int, error) {
	if list == "" {
		return nil, nil
	}
	var ids []int
	seen := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		id, ok := parseSensor(strings.TrimSpace(f), names)
		if !ok {
			return nil, fmt.Errorf("sensors: unknown sensor %q: want %s", f, forecastsParamWant("sensors", names))
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// bearer reports whether r carries "Authorization: Bearer token" (the
// scheme's name in any case, as RFC 9110 has it), the token compared in
// constant time.
func bearer(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// wantsCSV reports whether a request for forecasts asks for CSV:
// ?format=csv, or, without format, an Accept header that gives text/csv
// a quality above 0 and above application/json's (a spreadsheet's or BI
// tool's fetch); on a tie, JSON. Media ranges (text/*, */*) count as RFC
// 9110 has it: a type takes the quality of the most specific range that
// matches it.
func wantsCSV(q url.Values, h http.Header) (bool, error) {
	switch f := q.Get("format"); f {
	case "csv":
		return true, nil
	case "json":
		return false, nil
	case "":
		accept := h.Get("Accept")
		csv := acceptQ(accept, "text/csv")
		return csv > 0 && csv > acceptQ(accept, "application/json"), nil
	default:
		return false, fmt.Errorf("format %q: want json or csv", f)
	}
}

// acceptQ returns the quality an Accept header gives mediaType: that of
// the most specific media range matching it (type/subtype, then type/*,
// then */*; the largest q among ranges equally specific; 1 by default;
// names compared without regard to case), and −1 when none matches.
func acceptQ(accept, mediaType string) float64 {
	typ, _, _ := strings.Cut(mediaType, "/")
	best, rank := -1.0, 0
	for _, part := range strings.Split(accept, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.TrimSpace(name)
		r := 0
		switch {
		case strings.EqualFold(name, mediaType):
			r = 3
		case strings.EqualFold(name, typ+"/*"):
			r = 2
		case name == "*/*":
			r = 1
		}
		if r == 0 || r < rank {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && x >= 0 && x <= 1 {
					q = x
				}
			}
		}
		if r > rank {
			best, rank = q, r
		} else {
			best = max(best, q)
		}
	}
	return best
}
