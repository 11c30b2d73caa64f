package tenant

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a tenant file.
type Problem struct {
	// Path names the field: "phone_numbers[1].phone_number_id"; empty for the whole file.
	Path string
	// Line is the file's line (1-based); 0 when unknown (a tenant not read from a file, or a
	// required key that is absent at the top level).
	Line int
	// Message says what is wrong, and what is expected.
	Message string
}

// String renders the problem as one line: "path: message (line N)".
func (p Problem) String() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}

// Problems is every problem found, in file order where known. As an error it renders one
// problem a line; callers that print their own way use errors.As to get the list.
type Problems []Problem

// Error joins the problems, one a line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// err returns ps as an error, nil when empty (never a typed nil).
func (ps Problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// problems collects Problems with paths; withLines fills lines from a path index.
type problems struct{ list Problems }

func (c *problems) add(path, format string, args ...any) {
	c.list = append(c.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// withLines sets each problem's line from lines, the line of the path or of its nearest
// ancestor that the file has (a missing key is reported on its parent's line).
func withLines(ps Problems, lines map[string]int) Problems {
	for i := range ps {
		if ps[i].Line != 0 {
			continue
		}
		for p := ps[i].Path; p != ""; p = parent(p) {
			if l, ok := lines[p]; ok {
				ps[i].Line = l
				break
			}
		}
	}
	return ps
}

// parent returns the path one level up: "a.b[2].c" → "a.b[2]" → "a.b" → "a" → "".
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func join(path, key string) string {
	switch {
	case key == "":
		return path
	case path == "":
		return key
	default:
		return path + "." + key
	}
}
