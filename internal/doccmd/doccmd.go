// Package doccmd finds the pems-train and forecaster commands that the
// project's Markdown documents show in fenced sh blocks, and checks each
// against the flags its subcommand defines, parsing its words as the flag
// package would. A document that shows a flag or a subcommand the binary
// lacks, or a flag value of the wrong type, then fails the tests
// (cmd/pems-train's and cmd/forecaster's TestDocumentedCommands) instead
// of misleading its reader.
//
// The shell is read only as far as the documents need: words, quotes,
// $(…) and ${…}, comments, line continuations, pipelines and lists,
// redirections, variable assignments and the wrappers nice, timeout and
// time before a command. A command is found where its first word is
// pems-train or forecaster (any directory: bin/pems-train), go run
// ./cmd/pems-train or ./cmd/forecaster, or scripts/reproduce-seeds, whose
// flags after OUT SEEDS JOBS are pems-train reproduce's.
package doccmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The programs whose commands are checked.
const (
	PemsTrain  = "pems-train"
	Forecaster = "forecaster"
)

// Log is the document left out of the checks: the measurement log keeps
// commands as they were run, with the binaries of their dates.
const Log = "docs/results-log.md"

// Command is one command of a document's sh block.
type Command struct {
	File    string   // the document
	Line    int      // line of the command's program word, from 1
	Program string   // PemsTrain or Forecaster
	Args    []string // the words after the program: the subcommand, then its flags
	// Via is "scripts/reproduce-seeds" for a command written through
	// the script, which sets -seeds, -out and -merge itself.
	Via string
	// Problem says what is wrong with the command's form, found while
	// reading it (a script's arguments missing), or is "".
	Problem string
}

// String returns the command as file:line: program args.
func (c Command) String() string {
	return fmt.Sprintf("%s:%d: %s %s", c.File, c.Line, c.Program, strings.Join(c.Args, " "))
}

// Documents returns the documents whose commands are checked, relative to
// root (the module's directory): README.md, RESULTS.md and docs/*.md but
// the log.
func Documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("list docs: %w", err)
	}
	files := []string{"README.md", "RESULTS.md"}
	for _, d := range docs {
		rel := path.Join("docs", filepath.Base(d))
		if rel != Log {
			files = append(files, rel)
		}
	}
	slices.Sort(files[2:])
	return files, nil
}

// Load returns the commands of program in the documents under root.
func Load(root, program string) ([]Command, error) {
	files, err := Documents(root)
	if err != nil {
		return nil, err
	}
	var out []Command
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("read document: %w", err)
		}
		cmds, err := Parse(f, md)
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			if c.Program == program {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// Block is the text of a fenced code block.
type Block struct {
	Info string // the fence's info string: "sh", "json", …
	Line int    // line of the block's first text line, from 1
	Text string // the lines between the fences, each ending in "\n"
	// Marker is the HTML comment on the line before the fence, without
	// its "<!--" and "-->", or "".
	Marker string
}

// fence matches a fence line: up to three spaces of indentation (more
// inside list items), then ``` or ~~~ and the info string.
var fence = regexp.MustCompile("^( *)(```+|~~~+)[ \t]*([^ \t\r\n`]*)")

// Blocks returns md's fenced code blocks. An unclosed block runs to the
// end, as CommonMark has it.
func Blocks(md []byte) []Block {
	lines := strings.SplitAfter(string(md), "\n")
	var out []Block
	prev := ""
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if t := strings.TrimSpace(lines[i]); t != "" {
				prev = t
			}
			continue
		}
		b := Block{Info: m[3], Line: i + 2}
		if strings.HasPrefix(prev, "<!--") && strings.HasSuffix(prev, "-->") {
			b.Marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(prev, "<!--"), "-->"))
		}
		var text strings.Builder
		for i++; i < len(lines); i++ {
			if c := fence.FindStringSubmatch(lines[i]); c != nil && c[3] == "" &&
				c[2][0] == m[2][0] && len(c[2]) >= len(m[2]) {
				break
			}
			text.WriteString(strings.TrimPrefix(lines[i], m[1]))
		}
		b.Text = text.String()
		if b.Text != "" && !strings.HasSuffix(b.Text, "\n") {
			b.Text += "\n"
		}
		out = append(out, b)
		prev = ""
	}
	return out
}

// Parse returns the pems-train and forecaster commands of md's sh blocks
// (info string sh, bash or shell); file names the document in the
// commands and errors.
func Parse(file string, md []byte) ([]Command, error) {
	var out []Command
	for _, b := range Blocks(md) {
		switch b.Info {
		case "sh", "bash", "shell":
		default:
			continue
		}
		cmds, err := lex(b.Text, b.Line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, words := range cmds {
			if c, ok := find(words); ok {
				c.File = file
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// Runner is a command's entry point, as cmd/pems-train's and
// cmd/forecaster's run: it takes the arguments after the program's name
// and returns the exit status.
type Runner func(args []string, stdout, stderr io.Writer) int

// Checker checks commands of one program against its subcommands' flags,
// which it asks the program for (SUBCOMMAND -h) once each.
type Checker struct {
	Program string
	Run     Runner
	flags   map[string]Flags
}

// Check returns what is wrong with c: a subcommand the program does not
// have, a flag its subcommand does not define, a value that its flag does
// not take, a word after the flags, or (through scripts/reproduce-seeds)
// a flag the script sets itself.
func (k *Checker) Check(c Command) error {
	if c.Problem != "" {
		return fmt.Errorf("%s", c.Problem)
	}
	if len(c.Args) == 0 {
		return fmt.Errorf("no subcommand: %s takes one", k.Program)
	}
	sub := c.Args[0]
	if strings.HasPrefix(sub, "-") {
		if (sub == "-h" || sub == "--help") && len(c.Args) == 1 {
			return nil
		}
		return fmt.Errorf("%q before the subcommand: %s takes a subcommand first", sub, k.Program)
	}
	f, ok := k.flags[sub]
	if !ok {
		var help bytes.Buffer
		if code := k.Run([]string{sub, "-h"}, io.Discard, &help); code != 0 {
			return fmt.Errorf("%q is not a %s command (%s %s -h exits %d)", sub, k.Program, k.Program, sub, code)
		}
		var err error
		if f, err = ParseHelp(help.String()); err != nil {
			return fmt.Errorf("%s %s -h: %w", k.Program, sub, err)
		}
		if k.flags == nil {
			k.flags = map[string]Flags{}
		}
		k.flags[sub] = f
	}
	if c.Via != "" {
		for _, a := range c.Args[1:] {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") && (name == "seeds" || name == "out" || name == "merge") {
				return fmt.Errorf("%s: %s sets -%s itself", a, c.Via, name)
			}
		}
	}
	return f.Check(c.Args[1:])
}
