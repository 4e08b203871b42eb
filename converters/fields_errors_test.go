package converters

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRowErrors(t *testing.T) {
	a := &RowError{File: "f", Row: 1, Err: errors.New("a")}
	b := &RowError{File: "f", Row: 1, Err: errors.New("b")}
	tests := []struct {
		name string
		err  error
		want []*RowError
	}{
		{"nil", nil, nil},
		{"single", a, []*RowError{a}},
		{"joined", errors.Join(a, b), []*RowError{a, b}},
		{"nested joins", errors.Join(errors.Join(a), b), []*RowError{a, b}},
		{"other errors skipped", errors.Join(errors.New("x"), b), []*RowError{b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RowErrors(tt.err)
			if len(got) != len(tt.want) {
				t.Fatalf("RowErrors = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("RowErrors[%d] = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestErrorsAreCapped(t *testing.T) {
	const extra = 60
	header := []string{"host", "name", "topic"}
	for i := range extra {
		header = append(header, fmt.Sprintf("unknown%d", i))
	}
	_, err := NewColumns("wide.csv", 1, header, Options{})
	got := RowErrors(err)
	if len(got) != maxErrors+1 || !strings.Contains(got[maxErrors].Error(), fmt.Sprintf("%d more problems in the header not shown", extra-maxErrors)) {
		t.Errorf("header with %d unknown columns: %d errors, last %q; want %d and a count of the rest", extra, len(got), got[len(got)-1], maxErrors+1)
	}

	header = append(header[:3], make([]string, extra)...) // unnamed columns
	c, err := NewColumns("wide.csv", 1, header, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{"acme", "job", "jobs"}
	for range extra {
		cells = append(cells, "stray")
	}
	got = RowErrors(c.Row(2, cells).Err)
	if len(got) != maxErrors+1 || !strings.Contains(got[maxErrors].Error(), fmt.Sprintf("%d more problems in this row not shown", extra-maxErrors)) {
		t.Errorf("row with %d stray values: %d errors, last %q; want %d and a count of the rest", extra, len(got), got[len(got)-1], maxErrors+1)
	}
}
