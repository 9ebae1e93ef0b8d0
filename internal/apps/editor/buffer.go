package editor

import (
	"strings"
	"unicode/utf8"
)

// Cursor is a position in the buffer: Line counts from 1, Column from 0 in Unicode code
// points from the start of the line, so that {1, 0} is the start of any buffer and the
// column just past a line's last character is valid.
type Cursor struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// buffer is the editor's model. An empty buffer names no file, is not modified and has its
// cursor at {1, 0}.
type buffer struct {
	rel      string // the file it was opened from or saved to, relative to the root; "" for none
	content  string
	modified bool
	cursor   Cursor
	gen      uint64 // names this state: every change gets a fresh one, undo puts the old one back
}

// lineCount is the number of lines of content as an editor shows them: one more than its
// newlines, so an empty buffer has one empty line and "a\n" has two.
func lineCount(content string) int { return strings.Count(content, "\n") + 1 }

// line returns the text of line n (from 1) of content, without its newline, and whether there
// is such a line.
func line(content string, n int) (string, bool) {
	if n < 1 {
		return "", false
	}
	for i := 1; i < n; i++ {
		j := strings.IndexByte(content, '\n')
		if j < 0 {
			return "", false
		}
		content = content[j+1:]
	}
	if j := strings.IndexByte(content, '\n'); j >= 0 {
		content = content[:j]
	}
	return content, true
}

// validCursor reports which part of c lies outside content: "" when c is a position in it,
// else "cursor.line" or "cursor.column".
func validCursor(content string, c Cursor) string {
	l, ok := line(content, c.Line)
	switch {
	case !ok:
		return "cursor.line"
	case c.Column < 0 || c.Column > utf8.RuneCountInString(l):
		return "cursor.column"
	}
	return ""
}

// clamp moves c to the nearest position of content: the last line when it lies below it, the
// line's end when it lies right of it.
func clamp(content string, c Cursor) Cursor {
	if n := lineCount(content); c.Line > n {
		c.Line = n
	}
	if c.Line < 1 {
		c.Line = 1
	}
	l, _ := line(content, c.Line)
	if n := utf8.RuneCountInString(l); c.Column > n {
		c.Column = n
	}
	if c.Column < 0 {
		c.Column = 0
	}
	return c
}
