package intake

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/jobdrop/jobdrop/converters"
	"github.com/jobdrop/jobdrop/injector"
	"github.com/jobdrop/jobdrop/internal/arrival"
	"github.com/jobdrop/jobdrop/internal/kafka"
	"github.com/jobdrop/jobdrop/internal/kafkatest"
	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/watcher"
)

// TestHandleFileDecides: what the watcher is told to do with a file
// follows from the injector's answer, and a file whose content was never
// recorded fails on its arrival; a moved file's batch records where it
// went, under whoever uploaded it.
func TestHandleFileDecides(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	topics := record.Topics{}.WithDefaults()
	if err := kafka.EnsureTopics(context.Background(), kafkatest.Client(t, brokers), topics, 3, -1); err != nil {
		t.Fatal(err)
	}
	opts := kafka.ClientOpts(brokers, "test")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	inj, err := injector.New(injector.Config{ClientOpts: opts, TransactionalID: "test-intake", Topics: topics}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inj.Close)
	notices, err := arrival.New(arrival.Config{ClientOpts: opts, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(notices.Close)
	dir := t.TempDir()
	folders := map[string]Folder{
		dir: {Dir: dir, Converter: func(string) (converters.Converter, error) { return converters.CSV{}, nil }},
		"good-rows": {Dir: "good-rows", Policy: injector.PolicyGoodRows,
			Converter: func(string) (converters.Converter, error) { return converters.CSV{}, nil }},
		"broken": {Dir: "broken", Converter: func(string) (converters.Converter, error) { return nil, errors.New("no converter") }},
	}
	in, err := New(Config{Injector: inj, Notices: notices, Node: "node-1", Folder: func(d string) (Folder, bool) {
		f, ok := folders[d]
		return f, ok
	}}, log)
	if err != nil {
		t.Fatal(err)
	}
	const header = "host,name,topic,timeUnit,time\n"
	for _, tc := range []struct {
		name, folder, content string
		want                  func(error) bool
	}{
		{"valid", dir, header + "acme,a,jobs,MINUTES,1\n", func(err error) bool { return err == nil }},
		{"invalid row", dir, header + "acme,b,jobs,FORTNIGHTS,1\n", func(err error) bool {
			var rej *injector.RejectedError
			return errors.As(err, &rej)
		}},
		{"good rows", "good-rows", header + "acme,c,jobs,MINUTES,1\nacme,d,jobs,FORTNIGHTS,1\n", func(err error) bool {
			var partial *watcher.PartialError
			return errors.As(err, &partial)
		}},
		{"no converter", "broken", header, func(err error) bool { return err != nil && err.Error() == "no converter" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name+".csv")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			f := watcher.File{Dir: tc.folder, Name: tc.name + ".csv", Path: path}
			if tc.name == "valid" {
				undo := in.Uploading(filepath.Join(tc.folder, f.Name), "ada")
				defer undo()
			}
			if err := in.HandleFile(context.Background(), f); !tc.want(err) {
				t.Fatalf("HandleFile: %v", err)
			}
			in.FileMoved(f, filepath.Join(tc.folder, "archive", f.Name))
		})
	}

	events := kafkatest.Decode[record.Audit](t, kafkatest.Drain(t, brokers, topics.Audit))
	got := map[string]bool{}
	for _, a := range events {
		got[a.Action+" "+a.Object+" by "+a.Actor] = true
	}
	for _, want := range []string{
		record.ActionFileConverting + " valid.csv by node-1",
		record.ActionFileInjected + " valid.csv by ada",
		record.ActionFileMoved + " " + filepath.Join(dir, "archive", "valid.csv") + " by node-1",
		record.ActionFileRejected + " invalid row.csv by watcher",
		record.ActionFileFailed + " no converter.csv by node-1",
	} {
		if !got[want] {
			t.Errorf("no event %q among %v", want, got)
		}
	}
	if got[record.ActionFileFailed+" invalid row.csv by node-1"] {
		t.Error("a rejected file's arrival failed too: its batch says why")
	}
}
