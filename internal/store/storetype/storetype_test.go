package storetype

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestExecutionTimeoutInMilliseconds: an execution's JSON says its timeout
// as its task's definition does, in milliseconds, and reads back the same.
func TestExecutionTimeoutInMilliseconds(t *testing.T) {
	fired := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	e := Execution{FireID: "f1", Host: "acme", Name: "slow", Status: ExecutionRunning, FiredAt: &fired, Timeout: 90 * time.Second}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"timeout":90000`) || strings.Count(string(b), `"timeout"`) != 1 {
		t.Errorf("JSON %s, want one \"timeout\":90000", b)
	}
	var back Execution
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Timeout != e.Timeout || back.FireID != e.FireID || !back.FiredAt.Equal(fired) || back.Status != e.Status {
		t.Errorf("read back %+v, want %+v", back, e)
	}
	if b, _ := json.Marshal(Execution{FireID: "f2"}); strings.Contains(string(b), "timeout") {
		t.Errorf("no timeout: JSON %s says one", b)
	}
}
