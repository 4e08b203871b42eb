package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/watcher"
)

// sheet writes a workbook of rows, the first the header, as a user's
// spreadsheet program would, and returns its bytes.
func sheet(t *testing.T, rows [][]any) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSpreadsheetInASyncFolderReplacesWhatItsEarlierVersionCreated drops
// an Excel job list into a sync folder, then an edited version: a row
// moved, one changed, one removed, one added. The engine holds exactly the
// second version's tasks.
func TestSpreadsheetInASyncFolderReplacesWhatItsEarlierVersionCreated(t *testing.T) {
	in := startInstanceEnv(t, []string{"JOBDROP_WATCH_0_SYNC=true"})
	header := []any{"host", "name", "topic", "timeUnit", "time", "data.command"}
	v1 := [][]any{header,
		{"acme", "extract", "jobs", "HOURS", 1, "/opt/etl/extract"},
		{"acme", "load", "jobs", "HOURS", 2, "/opt/etl/load"},
		{"acme", "report", "jobs", "DAYS", 1, "/opt/report"},
		{"acme", "purge", "jobs", "DAYS", 7, "/opt/purge"},
	}
	v2 := [][]any{header,
		{"acme", "report", "jobs", "DAYS", 1, "/opt/report"},
		{"acme", "extract", "jobs", "HOURS", 1, "/opt/etl/extract --full"},
		{"acme", "load", "jobs", "HOURS", 2, "/opt/etl/load"},
		{"acme", "archive", "jobs", "DAYS", 30, "/opt/archive"},
	}
	in.drop("etl.xlsx", sheet(t, v1))
	in.waitFile("archive", "etl.xlsx")
	kafkatest.Eventually(t, 30*time.Second, "v1's four tasks", func() bool {
		return slices.Equal(in.liveTasks(), []string{"extract", "load", "purge", "report"})
	})
	in.drop("etl.xlsx", sheet(t, v2))
	in.waitFiles(watcher.ArchiveDir, "etl.xlsx", 2)
	kafkatest.Eventually(t, 30*time.Second, "v2's four tasks", func() bool {
		return slices.Equal(in.liveTasks(), []string{"archive", "extract", "load", "report"})
	})
	var extract storetype.Task
	if err := in.getJSON("/api/tasks/acme/extract", &extract); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(extract.Definition, "/opt/etl/extract --full") {
		t.Errorf("extract's definition %s, want v2's command", extract.Definition)
	}
	var files []storetype.Batch
	if err := in.getJSON("/api/files", &files); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(files, func(b storetype.Batch) bool { return b.Diff != nil && b.Diff.Added == 1 })
	if i < 0 {
		t.Fatalf("no file with v2's diff: %+v", files)
	}
	if d := files[i].Diff; d.Changed != 1 || d.Removed != 1 || d.Unchanged != 2 {
		t.Errorf("v2's diff %+v, want 1 added, 1 changed, 1 removed, 2 unchanged", *d)
	}
}
