package web_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/task"
)

// TestSchedulersListsEveryLiveDefinition: light-scheduler's GET
// /schedulers answers every live definition its filters select, however
// many, as one JSON array.
func TestSchedulersListsEveryLiveDefinition(t *testing.T) {
	const n = 1_200
	f, _ := manyTasks(t, n)
	d := task.Definition{Host: "host1", Name: "hourly", Action: task.Insert, Topic: "jobs",
		Frequency: &task.Frequency{TimeUnit: task.Hours, Time: 1}}
	f.add(topics.State, d.Key(), record.State{Definition: d, Anchor: ms(now), NextFire: ms(now.Add(time.Hour)), UpdatedAt: ms(now)})
	ts := serve(t, f)
	for query, want := range map[string]int{"": 2*n + 1, "?host=host1": n + 1, "?host=host1&unit=DAYS": n,
		"?host=host1&unit=HOURS": 1, "?host=host0&name=job-0042": 1, "?host=nobody": 0} {
		resp, body := get(t, ts.URL+"/schedulers"+query)
		var defs []task.Definition
		if err := json.Unmarshal([]byte(body), &defs); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /schedulers%s: %s, %v", query, resp.Status, err)
		}
		if len(defs) != want || body[0] != '[' {
			t.Errorf("GET /schedulers%s: %d definitions, want %d", query, len(defs), want)
		}
	}
}

// spreadsheetMacro opens a workbook hidden in LibreOffice and writes what
// a person sees of it to a file: whether the view is frozen and where,
// the type (1: a number, 2: text), value and shown text of cells, and the
// header's weight (150: bold).
const spreadsheetMacro = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" script:language="StarBasic">
Sub Look(inURL As String, outPath As String, cells As String)
	On Error GoTo Failed
	Dim args(0) As New com.sun.star.beans.PropertyValue
	args(0).Name = "Hidden"
	args(0).Value = True
	doc = StarDesktop.loadComponentFromURL(inURL, "_blank", 0, args())
	sheet = doc.Sheets.getByIndex(0)
	ctl = doc.getCurrentController()
	out = "frozen " &amp; ctl.hasFrozenPanes() &amp; " " &amp; ctl.getSplitColumn() &amp; " " &amp; ctl.getSplitRow() &amp; Chr(10)
	out = out &amp; "weight " &amp; sheet.getCellRangeByName("A1").CharWeight &amp; Chr(10)
	For Each name In Split(cells, ",")
		c = sheet.getCellRangeByName(name)
		out = out &amp; name &amp; " " &amp; c.getType() &amp; " " &amp; c.getValue() &amp; " " &amp; c.getString() &amp; Chr(10)
	Next
	doc.close(True)
	GoTo Done
Failed:
	out = "error " &amp; Err &amp; " " &amp; Error$ &amp; Chr(10)
Done:
	n = FreeFile
	Open outPath For Output As #n
	Print #n, out
	Close #n
End Sub
</script:module>
`
