package doccmd

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// word is a shell word with its quotes removed and the line it starts on.
type word struct {
	text string
	line int
}

// lexer splits a block of shell into simple commands: the words of each,
// with comments and redirections left out.
type lexer struct {
	s    string
	i    int
	line int

	cur      strings.Builder
	inWord   bool
	wordLine int
	redirect bool // the next word is a redirection's target: dropped

	cmd  []word
	cmds [][]word
}

// lex returns the simple commands of text, whose first line is line.
func lex(text string, line int) ([][]word, error) {
	l := &lexer{s: text, line: line}
	for l.i < len(l.s) {
		if err := l.step(); err != nil {
			return nil, fmt.Errorf("line %d: %w", l.line, err)
		}
	}
	l.endCommand()
	return l.cmds, nil
}

func (l *lexer) peek(k int) byte {
	if l.i+k < len(l.s) {
		return l.s[l.i+k]
	}
	return 0
}

// step reads one character, or one construct that starts there.
func (l *lexer) step() error {
	c := l.s[l.i]
	switch {
	case c == '\\' && l.peek(1) == '\n': // a continuation
		l.i += 2
		l.line++
	case c == '\\':
		l.add(string(l.peek(1)))
		l.i += 2
	case c == '\n':
		l.endCommand()
		l.i++
		l.line++
	case c == ' ' || c == '\t' || c == '\r':
		l.flush()
		l.i++
	case c == '#' && !l.inWord:
		for l.i < len(l.s) && l.s[l.i] != '\n' {
			l.i++
		}
	case c == ';' || c == '|' || c == '(' || c == ')' || c == '{' && !l.inWord && l.peek(1) == ' ' || c == '}' && !l.inWord:
		l.endCommand()
		l.i++
	case c == '&':
		if l.peek(1) == '>' { // &> and &>>: both outputs redirected
			l.flush()
			l.i += 2
			if l.peek(0) == '>' {
				l.i++
			}
			l.redirect = true
			return nil
		}
		l.endCommand()
		l.i++
	case c == '>' || c == '<':
		return l.redirection()
	case c == '\'':
		end := strings.IndexByte(l.s[l.i+1:], '\'')
		if end < 0 {
			return fmt.Errorf("unterminated single quote")
		}
		l.add(l.s[l.i+1 : l.i+1+end])
		l.line += strings.Count(l.s[l.i+1:l.i+1+end], "\n")
		l.i += end + 2
	case c == '"':
		return l.doubleQuoted()
	case c == '$' && (l.peek(1) == '(' || l.peek(1) == '{'):
		return l.substitution()
	default:
		l.add(string(c))
		l.i++
	}
	return nil
}

// add appends s to the word being read, starting one if none is.
func (l *lexer) add(s string) {
	if !l.inWord {
		l.inWord, l.wordLine = true, l.line
	}
	l.cur.WriteString(s)
}

// flush ends the word being read, if any.
func (l *lexer) flush() {
	if !l.inWord {
		return
	}
	w := word{l.cur.String(), l.wordLine}
	l.cur.Reset()
	l.inWord = false
	if l.redirect {
		l.redirect = false
		return
	}
	l.cmd = append(l.cmd, w)
}

// endCommand ends the simple command being read, if any.
func (l *lexer) endCommand() {
	l.flush()
	if len(l.cmd) > 0 {
		l.cmds = append(l.cmds, l.cmd)
	}
	l.cmd = nil
	l.redirect = false
}

// redirection reads >, >>, >&N, <, <<<, <(…) and the like, and marks the
// target as dropped; a file descriptor before it (2>) is dropped too.
func (l *lexer) redirection() error {
	if l.inWord && strings.Trim(l.cur.String(), "0123456789") == "" {
		l.cur.Reset()
		l.inWord = false
	} else {
		l.flush()
	}
	op := l.s[l.i]
	if op == '<' && l.peek(1) == '(' { // process substitution: left out whole
		l.i++
		return l.skipParens()
	}
	if op == '<' && l.peek(1) == '<' && l.peek(2) != '<' {
		return fmt.Errorf("here-documents are not read: show the input another way")
	}
	l.i++
	for l.i < len(l.s) && (l.s[l.i] == '>' || l.s[l.i] == '<' || l.s[l.i] == '|') {
		l.i++
	}
	if l.peek(0) == '&' { // >&2, <&0, >&-
		l.i++
		for l.i < len(l.s) && (l.s[l.i] >= '0' && l.s[l.i] <= '9' || l.s[l.i] == '-') {
			l.i++
		}
		return nil
	}
	l.redirect = true
	return nil
}

// doubleQuoted reads a "…" string into the word: backslash escapes the
// characters it escapes there, and $(…) inside is kept whole.
func (l *lexer) doubleQuoted() error {
	start := l.line
	l.add("")
	l.i++
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '"':
			l.i++
			return nil
		case c == '\\' && strings.IndexByte("\"\\$`\n", l.peek(1)) >= 0:
			if l.peek(1) == '\n' {
				l.line++
			} else {
				l.cur.WriteByte(l.peek(1))
			}
			l.i += 2
		case c == '$' && (l.peek(1) == '(' || l.peek(1) == '{'):
			if err := l.substitution(); err != nil {
				return err
			}
		default:
			if c == '\n' {
				l.line++
			}
			l.cur.WriteByte(c)
			l.i++
		}
	}
	return fmt.Errorf("unterminated double quote from line %d", start)
}

// substitution reads $(…) or ${…} into the word as written.
func (l *lexer) substitution() error {
	start := l.i
	l.i++ // at ( or {
	if l.s[l.i] == '{' {
		end := strings.IndexByte(l.s[l.i:], '}')
		if end < 0 {
			return fmt.Errorf("unterminated ${")
		}
		l.i += end + 1
	} else if err := l.skipParens(); err != nil {
		return err
	}
	l.add(l.s[start:l.i])
	return nil
}

// skipParens moves past the parenthesised text that starts at l.i,
// nested parentheses and quotes included.
func (l *lexer) skipParens() error {
	depth := 0
	for l.i < len(l.s) {
		switch c := l.s[l.i]; c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				l.i++
				return nil
			}
		case '\'', '"':
			end := strings.IndexByte(l.s[l.i+1:], c)
			if end < 0 {
				return fmt.Errorf("unterminated quote in $(…)")
			}
			l.line += strings.Count(l.s[l.i+1:l.i+1+end], "\n")
			l.i += end + 1
		case '\n':
			l.line++
		}
		l.i++
	}
	return fmt.Errorf("unterminated $( or <(")
}

// assignment matches a variable assignment before a command (NAME=value).
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// find returns the command whose words are words, if its program is one
// of those checked, past assignments, keywords and wrappers.
func find(words []word) (Command, bool) {
	i := skipPrefix(words)
	if i >= len(words) {
		return Command{}, false
	}
	rest := func(from int) []string {
		var out []string
		for _, w := range words[from:] {
			out = append(out, w.text)
		}
		return out
	}
	w := words[i].text
	switch base := path.Base(w); {
	case base == PemsTrain || base == Forecaster:
		return Command{Line: words[i].line, Program: base, Args: rest(i + 1)}, true
	case base == "reproduce-seeds":
		args := rest(i + 1)
		if len(args) < 3 {
			return Command{Line: words[i].line, Program: PemsTrain, Args: []string{"reproduce"}, Via: w,
				Problem: w + " wants OUT SEEDS JOBS before the flags"}, true
		}
		return Command{Line: words[i].line, Program: PemsTrain, Args: append([]string{"reproduce"}, args[3:]...), Via: w}, true
	case w == "go" && i+1 < len(words) && words[i+1].text == "run":
		for j := i + 2; j < len(words); j++ {
			t := words[j].text
			if strings.HasPrefix(t, "-") {
				continue // go run's own flags
			}
			t = strings.TrimSuffix(strings.TrimPrefix(t, "github.com/pemsforecast/sdgnn/"), "/")
			t = strings.TrimPrefix(t, "./")
			if t == "cmd/"+PemsTrain || t == "cmd/"+Forecaster {
				return Command{Line: words[i].line, Program: path.Base(t), Args: rest(j + 1)}, true
			}
			return Command{}, false
		}
	}
	return Command{}, false
}

// skipPrefix returns the index of the command word of words: past
// variable assignments, the keywords that can stand before a command, and
// the wrappers env, nice, timeout and time with their options.
func skipPrefix(words []word) int {
	i := 0
	for i < len(words) {
		w := words[i].text
		switch {
		case assignment.MatchString(w):
			i++
		case w == "do" || w == "then" || w == "else" || w == "elif" || w == "!" || w == "exec" || w == "env" || w == "time" || w == "sudo":
			i++
		case w == "nice":
			i++
			if i < len(words) && words[i].text == "-n" {
				i += 2
			} else if i < len(words) && strings.HasPrefix(words[i].text, "-") {
				i++
			}
		case w == "timeout":
			i++
			for i < len(words) && strings.HasPrefix(words[i].text, "-") {
				if o := words[i].text; o == "-s" || o == "-k" || o == "--signal" || o == "--kill-after" {
					i++
				}
				i++
			}
			i++ // the duration
		case path.Base(w) == "time" && strings.HasPrefix(w, "/"):
			i++
			for i < len(words) && strings.HasPrefix(words[i].text, "-") {
				if o := words[i].text; o == "-f" || o == "-o" || o == "--format" || o == "--output" {
					i++
				}
				i++
			}
		default:
			return i
		}
	}
	return i
}
