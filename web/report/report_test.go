package report

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func rows(cells ...[]Cell) func(context.Context, func([]Cell) error) error {
	return func(_ context.Context, row func([]Cell) error) error {
		for _, c := range cells {
			if err := row(c); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestCSVNeutralisesFormulasAndWritesTimesInTheZone(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		row  []Cell
		loc  *time.Location
		want string
	}{
		{"plain text", []Cell{Text("ops")}, nil, "ops"},
		{"formula", []Cell{Text("=1+1")}, nil, "'=1+1"},
		{"at sign", []Cell{Text("@SUM(A1)")}, nil, "'@SUM(A1)"},
		{"negative number, neutralised as CSV reads it as text", []Cell{Number(-3)}, nil, "'-3"},
		{"decimal", []Cell{Decimal(1.5)}, nil, "1.5"},
		{"time in UTC", []Cell{When(&at)}, nil, "2026-03-01T12:00:00Z"},
		{"time to the second in a zone", []Cell{WhenSecs(&at)}, paris, "2026-03-01T13:00:00+01:00"},
		{"no time", []Cell{When(nil)}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := WriteCSV(context.Background(), &b, Report{Name: "t", Header: []string{"v"}, Loc: tc.loc, Each: rows(tc.row)})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(strings.TrimPrefix(b.String(), "v\n")); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSheetIsCutAtItsLastRowAndSaysWhere(t *testing.T) {
	var b bytes.Buffer
	rep := Report{Name: "audit", Header: []string{"n"}, SheetRows: 3,
		Each: rows([]Cell{Number(1)}, []Cell{Number(2)}, []Cell{Number(3)}),
		Cut:  func(last []Cell) string { return "after " + last[0].String(time.UTC) }}
	if err := WriteXLSX(context.Background(), &b, rep); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open("xl/worksheets/sheet1.xml")
	if err != nil {
		t.Fatal(err)
	}
	sheet, _ := io.ReadAll(f)
	for _, want := range []string{`<row r="2"><c r="A2"><v>1</v>`, `<row r="3"><c r="A3" t="inlineStr"><is><t xml:space="preserve">cut: a sheet holds 3 rows; after 1</t>`} {
		if !bytes.Contains(sheet, []byte(want)) {
			t.Errorf("sheet lacks %s:\n%s", want, sheet)
		}
	}
	if bytes.Contains(sheet, []byte(`<row r="4"`)) {
		t.Errorf("sheet has a row past its last:\n%s", sheet)
	}
}

func TestColumnNames(t *testing.T) {
	for i, want := range map[int]string{0: "A", 25: "Z", 26: "AA", 701: "ZZ", 702: "AAA"} {
		if got := columnName(i); got != want {
			t.Errorf("columnName(%d) = %s, want %s", i, got, want)
		}
	}
}
