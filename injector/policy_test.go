package injector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
)

func TestGoodRowsPolicyInjectsValidRowsAndReportsTheOthers(t *testing.T) {
	tests := []struct {
		name string
		// extra rows after the bad ones: many are produced before the
		// file ends.
		extra int
	}{
		{"small file", 0},
		{"large file", bufferRows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, brokers, topics := newInjector(t)
			var b strings.Builder
			b.WriteString("host,name,topic,timeUnit,time\n")
			b.WriteString("acme,ok-1,jobs,MINUTES,1\n") // row 2
			b.WriteString("acme,eons,jobs,EONS,1\n")    // row 3: bad unit
			b.WriteString("acme,ok-1,jobs,MINUTES,2\n") // row 4: repeated task
			b.WriteString("acme,ok-2,jobs,HOURS,1\n")   // row 5
			b.WriteString("acme,nope,jobs,MINUTES,x\n") // row 6: bad time
			for i := range tt.extra {
				fmt.Fprintf(&b, "acme,extra-%06d,jobs,MINUTES,1\n", i)
			}
			want := []string{"acme/ok-1", "acme/ok-2"}
			for i := range tt.extra {
				want = append(want, fmt.Sprintf("acme/extra-%06d", i))
			}
			res, err := in.Inject(context.Background(), File{Path: writeFile(t, "mixed.csv", b.String()), Policy: PolicyGoodRows},
				converters.CSV{}, converters.Options{})
			if err != nil || res.Outcome != Partial || res.Report == nil {
				t.Fatalf("got %+v, %v; want a partial injection with a report", res, err)
			}
			if res.Batch.Rows != 5+tt.extra || res.Batch.Rejected != 3 {
				t.Errorf("batch rows %d rejected %d, want %d and 3", res.Batch.Rows, res.Batch.Rejected, 5+tt.extra)
			}
			report := res.Report.Error()
			for _, s := range []string{
				fmt.Sprintf("3 of %d rows rejected; the other %d were injected", 5+tt.extra, 2+tt.extra),
				`row 3: column timeUnit: value "EONS"`, "row 4", "appears again (first at row 2)", `row 6: column time: value "x"`,
			} {
				if !strings.Contains(report, s) {
					t.Errorf("report lacks %q:\n%s", s, report)
				}
			}

			var got []string
			for _, r := range kafkatest.Drain(t, brokers, topics.Input) {
				got = append(got, string(r.Key))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("input topic holds %d commands %.5v…, want %d %.5v…", len(got), got, len(want), want)
			}
			audits := kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit))
			if len(audits) != 1 || audits[0].Action != record.ActionFileInjected || audits[0].Batch == nil ||
				audits[0].Batch.Rejected != 3 || len(audits[0].Batch.Errors) != 3 ||
				!strings.Contains(audits[0].Detail, fmt.Sprintf("%d of %d rows injected, 3 rejected (policy good-rows)", 2+tt.extra, 5+tt.extra)) {
				t.Errorf("audit %+v", audits)
			}
		})
	}
}

func TestGoodRowsPolicyStillRejectsFilesWithNothingGood(t *testing.T) {
	in, brokers, topics := newInjector(t)
	for name, content := range map[string]string{
		"allbad.csv":   "host,name,topic,timeUnit,time\nacme,a,jobs,EONS,1\nacme,b,jobs,MINUTES,x\n",
		"nocols.csv":   "host,topic\nacme,jobs\n",
		"header.csv":   "host,name,topic\n",
		"unclosed.csv": "host,name,topic\nacme,\"a,jobs\nacme,b,jobs\n",
	} {
		res, err := in.Inject(context.Background(), File{Path: writeFile(t, name, content), Policy: PolicyGoodRows},
			converters.CSV{}, converters.Options{})
		var rej *RejectedError
		if !errors.As(err, &rej) || res.Outcome != Rejected || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %+v, %v; want a rejection naming the file", name, res, err)
		}
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != 0 {
		t.Errorf("%d commands reached the input topic", n)
	}
}

func TestFileOverSizeLimitIsRejectedUnread(t *testing.T) {
	in, brokers, topics := newInjector(t)
	content := "host,name,topic,timeUnit,time\nacme,a,jobs,MINUTES,1\n"
	path := writeFile(t, "big.csv", content)
	limit := int64(len(content) - 1)
	res, err := in.Inject(context.Background(), File{Path: path, MaxBytes: limit}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) || res.Outcome != Rejected {
		t.Fatalf("got %+v, %v; want a rejection", res, err)
	}
	want := fmt.Sprintf("big.csv: file is %d B (%d bytes), over the size limit of %d B (max_file_bytes: %d)", len(content), len(content), limit, limit)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	// At the limit it is fine; no limit at all too.
	for _, max := range []int64{int64(len(content)), -1} {
		if res, err := in.Inject(context.Background(), File{Path: path, MaxBytes: max}, converters.CSV{}, converters.Options{}); err != nil ||
			(res.Outcome != Injected && res.Outcome != Duplicate) {
			t.Errorf("max %d: %+v, %v", max, res, err)
		}
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != 1 {
		t.Errorf("%d commands on the input topic, want 1", n)
	}
	// Audit events of different keys land on different partitions: look
	// for the rejection rather than at a position.
	rejected := 0
	for _, a := range kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit)) {
		if a.Action == record.ActionFileRejected && strings.Contains(a.Detail, "size limit") {
			rejected++
		}
	}
	if rejected != 1 {
		t.Errorf("%d size-limit rejections in the audit trail, want 1", rejected)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 1 << 30: "1.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestRejectPolicyAbortsAtTheFirstBadRowAndReportsEveryOne injects a large
// file whose rows go into the transaction as they are converted: its first
// bad row aborts the transaction, the rest of the file is still read for
// the report, and nothing of it is committed.
func TestRejectPolicyAbortsAtTheFirstBadRowAndReportsEveryOne(t *testing.T) {
	in, brokers, topics := newInjector(t)
	const rows = 30_000
	var b strings.Builder
	b.WriteString("host,name,topic,timeUnit,time\n")
	for i := range rows {
		switch i {
		case 5_000: // row 5002
			b.WriteString("acme,eons,jobs,EONS,1\n")
		case 20_000: // row 20002
			b.WriteString("acme,job-000007,jobs,MINUTES,1\n")
		case rows - 1: // row 30001
			b.WriteString("acme,nope,jobs,MINUTES,x\n")
		default:
			fmt.Fprintf(&b, "acme,job-%06d,jobs,MINUTES,%d\n", i, i%60+1)
		}
	}
	res, err := in.Inject(context.Background(), File{Path: writeFile(t, "big.csv", b.String())}, converters.CSV{}, converters.Options{})
	var rej *RejectedError
	if !errors.As(err, &rej) || res.Outcome != Rejected {
		t.Fatalf("got %+v, %v; want a rejection", res, err)
	}
	if rej.Rows != rows || rej.Bad != 3 || res.Batch.Rows != rows || res.Batch.Rejected != 3 {
		t.Errorf("rows %d bad %d, batch %+v; want %d rows, 3 bad", rej.Rows, rej.Bad, res.Batch, rows)
	}
	for _, s := range []string{
		fmt.Sprintf("3 of %d rows rejected; nothing was injected", rows),
		`big.csv: row 5002: column timeUnit: value "EONS"`,
		"big.csv: row 20002: column name", "appears again (first at row 9)",
		`big.csv: row 30001: column time: value "x"`,
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("report lacks %q:\n%s", s, err)
		}
	}
	if n := len(kafkatest.Drain(t, brokers, topics.Input)); n != 0 {
		t.Errorf("%d commands of a rejected file were committed", n)
	}
	audits := kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit))
	if len(audits) != 1 || audits[0].Action != record.ActionFileRejected || audits[0].Batch == nil || audits[0].Batch.Rejected != 3 {
		t.Errorf("audit %+v", audits)
	}

	// The producer goes on: the next file commits.
	res, err = in.Inject(context.Background(), File{Path: writeFile(t, "good.csv", "host,name,topic\nacme,after,jobs\n")}, converters.CSV{}, converters.Options{})
	if err != nil || res.Outcome != Injected {
		t.Fatalf("next file: %+v, %v", res, err)
	}
	if recs := kafkatest.Drain(t, brokers, topics.Input); len(recs) != 1 || string(recs[0].Key) != "acme/after" {
		t.Errorf("input topic after the next file: %d records", len(recs))
	}
}
