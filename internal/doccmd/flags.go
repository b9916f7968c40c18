package doccmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Flags are a subcommand's flags: each name with the type its -h prints
// ("int", "string", "duration", …), "" for a boolean flag.
type Flags map[string]string

// ParseHelp reads the flags from a flag set's -h output (the flag
// package's PrintDefaults): a line "  -name" for a boolean flag, "  -name
// type" for another, each followed by its usage.
func ParseHelp(help string) (Flags, error) {
	f := Flags{}
	for _, line := range strings.Split(help, "\n") {
		rest, ok := strings.CutPrefix(line, "  -")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "\t") // a one-letter flag's usage follows a tab
		fields := strings.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			return nil, fmt.Errorf("help line %q is not a flag's", line)
		}
		typ := ""
		if len(fields) == 2 {
			typ = fields[1]
		}
		f[fields[0]] = typ
	}
	if len(f) == 0 {
		return nil, fmt.Errorf("no flags in the help %q", firstLine(help))
	}
	return f, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Check parses args, the words after a subcommand, as the flag package
// parses them with f defined, and returns the first thing wrong: a flag
// f does not have, a flag without its value, a value not of its flag's
// type (a value holding a shell variable, $…, is taken as it is), or a
// word after the flags, which the commands refuse.
func (f Flags) Check(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return fmt.Errorf("%q after --: the commands take flags only", args[i+1])
			}
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			return fmt.Errorf("%q is not a flag: the commands take flags only, and a word would hide the flags after it", a)
		}
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return fmt.Errorf("%q: bad flag syntax", a)
		}
		name, value, hasValue := strings.Cut(name, "=")
		typ, ok := f[name]
		if !ok {
			if name == "h" || name == "help" {
				continue
			}
			return fmt.Errorf("flag -%s is not defined", name)
		}
		if typ == "" {
			if hasValue {
				if _, err := strconv.ParseBool(value); err != nil {
					return fmt.Errorf("-%s=%s: a boolean flag takes true or false", name, value)
				}
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return fmt.Errorf("flag -%s needs a value (%s)", name, typ)
			}
			i++
			value = args[i]
		}
		if err := checkValue(typ, value); err != nil {
			return fmt.Errorf("-%s %s: %w", name, value, err)
		}
	}
	return nil
}

// checkValue returns an error if value cannot be a flag of type typ, as
// the flag package would parse it.
func checkValue(typ, value string) error {
	if strings.ContainsAny(value, "$`") {
		return nil // a shell variable or substitution: not known here
	}
	var err error
	switch typ {
	case "int":
		_, err = strconv.ParseInt(value, 0, strconv.IntSize)
	case "int64":
		_, err = strconv.ParseInt(value, 0, 64)
	case "uint":
		_, err = strconv.ParseUint(value, 0, strconv.IntSize)
	case "uint64":
		_, err = strconv.ParseUint(value, 0, 64)
	case "float":
		_, err = strconv.ParseFloat(value, 64)
	case "duration":
		_, err = time.ParseDuration(value)
	}
	if err != nil {
		return fmt.Errorf("not a %s", typ)
	}
	return nil
}
