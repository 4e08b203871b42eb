package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jobdrop/jobdrop/internal/chain"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// checkChain answers 400 when d follows a task that is not running (none
// of that key, or it ended), or would close a cycle with the running
// tasks it leads to; it reports whether d may be sent. A running task
// whose definition is not known here is taken to follow none.
func (s *Server) checkChain(w http.ResponseWriter, r *http.Request, d *task.Definition) bool {
	if !d.Chained() || d.Action.KeyOnly() {
		return true
	}
	running := map[string]bool{}
	g := chain.New()
	g.Set(d.Key(), d.Predecessors())
	err := g.Load(r.Context(), func(ctx context.Context, keys []string) (map[string][]string, error) {
		found := map[string][]string{}
		for _, k := range keys {
			t, err := s.src.TaskByKey(ctx, k)
			if errors.Is(err, storetype.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if !t.Live() {
				continue
			}
			var def task.Definition
			if t.Definition != "" {
				_ = json.Unmarshal([]byte(t.Definition), &def)
			}
			running[k] = true
			found[k] = def.Predecessors()
		}
		return found, nil
	})
	if err != nil {
		s.apiFail(w, r, err)
		return false
	}
	var fields []fieldError
	for i, p := range d.Predecessors() {
		if !running[p] {
			fields = append(fields, fieldError{Field: "after", Value: d.After[i], Reason: "predecessor " + p + " is not a running task"})
		}
	}
	if keys := g.Cycle([]string{d.Key()}); keys != nil {
		fields = append(fields, fieldError{Field: "after", Reason: "would close a cycle, " + chain.Path(keys) +
			": a task on a cycle waits for itself and never fires"})
	}
	if len(fields) > 0 {
		s.writeFieldErrors(w, fields...)
		return false
	}
	return true
}
