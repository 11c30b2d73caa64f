package pricing

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// row is one data row of a card file.
type row struct {
	line  int
	from  time.Time
	group string // market or model
	item  string // category or kind
	price Amount
}

// problem is what is wrong on one line of a file.
type problem struct {
	line int
	err  error
}

// parseFile reads the rows of one card file and checks them against spec. Its error joins one
// line per problem, in the order of the file's lines.
func parseFile(spec fileSpec, data []byte) ([]row, error) {
	rows, problems := readRows(spec, data)
	problems = append(problems, checkRows(spec, rows)...)
	if len(problems) == 0 {
		return rows, nil
	}
	slices.SortStableFunc(problems, func(a, b problem) int { return cmp.Compare(a.line, b.line) })
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = fmt.Errorf("%s:%d: %w", spec.name, p.line, p.err)
	}
	return nil, errors.Join(errs...)
}

// readRows reads the header and each row of a file, skipping lines that start with "#", and
// checks every row on its own.
func readRows(spec fileSpec, data []byte) ([]row, []problem) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1 // counted here, so a short row is one problem, not the end
	var (
		rows       []row
		problems   []problem
		headerLine int
	)
	for {
		fields, err := r.Read()
		if err == io.EOF {
			break
		}
		var parseErr *csv.ParseError
		if errors.As(err, &parseErr) {
			problems = append(problems, problem{parseErr.Line, parseErr.Err})
			continue
		}
		if err != nil {
			return nil, append(problems, problem{0, fmt.Errorf("csv.Reader.Read: %w", err)})
		}
		line, _ := r.FieldPos(0)
		if headerLine == 0 {
			headerLine = line
			if !slices.Equal(fields, spec.header) {
				// The columns mean nothing without the right header: stop here.
				return nil, append(problems, problem{line, fmt.Errorf("header is %q, want %q", strings.Join(fields, ","), strings.Join(spec.header, ","))})
			}
			continue
		}
		row, rowProblems := readRow(spec, line, fields)
		problems = append(problems, rowProblems...)
		if len(rowProblems) == 0 {
			rows = append(rows, row)
		}
	}
	switch {
	case headerLine == 0:
		problems = append(problems, problem{1, fmt.Errorf("no header, want %q", strings.Join(spec.header, ","))})
	case len(rows) == 0 && len(problems) == 0:
		problems = append(problems, problem{headerLine, errors.New("no rows after the header")})
	}
	return rows, problems
}

// readRow reads one row's fields, every problem of it a problem of its own.
func readRow(spec fileSpec, line int, fields []string) (row, []problem) {
	if len(fields) != len(spec.header) {
		return row{}, []problem{{line, fmt.Errorf("%d fields, want %d (%s)", len(fields), len(spec.header), strings.Join(spec.header, ","))}}
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	r := row{line: line, group: fields[1], item: fields[2]}
	var problems []problem
	add := func(err error) { problems = append(problems, problem{line, err}) }
	from, err := time.Parse(time.DateOnly, fields[0])
	if err != nil {
		add(fmt.Errorf("%s %q is not a date YYYY-MM-DD", spec.header[0], fields[0]))
	}
	r.from = from
	if r.group == "" {
		add(fmt.Errorf("%s is empty", spec.header[1]))
	} else if err := spec.group(r.group); err != nil {
		add(err)
	}
	if !slices.Contains(spec.items, r.item) {
		add(fmt.Errorf("%s %q is not one of %s", spec.header[2], r.item, strings.Join(spec.items, ", ")))
	}
	r.price, err = ParseUSD(fields[3])
	if err != nil {
		add(fmt.Errorf("%s: %w", spec.header[3], err))
	} else if err := spec.price(r.item, r.price); err != nil {
		add(err)
	}
	return r, problems
}

// checkRows finds what no row shows on its own: a row that repeats another's (date, group,
// item), and a group missing a required item on a date it has rows for.
func checkRows(spec fileSpec, rows []row) []problem {
	type groupKey struct {
		from  time.Time
		group string
	}
	type itemKey struct {
		groupKey
		item string
	}
	var (
		problems []problem
		seen     = make(map[itemKey]int)
		order    []groupKey // in the order of their first lines, so problems read in file order
		first    = make(map[groupKey]int)
	)
	for _, r := range rows {
		g := groupKey{r.from, r.group}
		k := itemKey{g, r.item}
		if line, dup := seen[k]; dup {
			problems = append(problems, problem{r.line, fmt.Errorf("duplicate row for (%s, %s, %s): first on line %d", r.from.Format(time.DateOnly), r.group, r.item, line)})
			continue
		}
		seen[k] = r.line
		if _, ok := first[g]; !ok {
			first[g] = r.line
			order = append(order, g)
		}
	}
	for _, g := range order {
		var missing []string
		for _, item := range spec.required {
			if _, ok := seen[itemKey{g, item}]; !ok {
				missing = append(missing, item)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, problem{first[g], fmt.Errorf("%s %q effective %s has no %s row", spec.header[1], g.group, g.from.Format(time.DateOnly), strings.Join(missing, ", no "))})
		}
	}
	return problems
}
