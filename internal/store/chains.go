package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// chainOf reads a task's chain column: the record.Chain its latest state
// carried, as JSON; nil for none, or for what cannot be read.
func chainOf(s string) *storetype.Chain {
	if s == "" {
		return nil
	}
	var c record.Chain
	if json.Unmarshal([]byte(s), &c) != nil {
		return nil
	}
	out := &storetype.Chain{Held: c.Held, Waiting: timePtr(sql.NullInt64{Int64: c.Waiting, Valid: c.Waiting != 0})}
	for _, p := range c.Preds {
		out.Preds = append(out.Preds, storetype.PredRun{Key: p.Key, Run: p.Run, Fire: p.Fire, Status: p.Status,
			At: timeOf(p.At), Fresh: p.Fresh})
	}
	if r := c.Release; r != nil {
		out.Release = &storetype.ChainRelease{At: timeOf(r.At), FireID: r.FireID, Runs: r.Runs}
	}
	return out
}

// jsonStrings reads a JSON array of strings; nil when empty or not one.
func jsonStrings(s string) []string {
	if s == "" || s == "[]" {
		return nil
	}
	var out []string
	if json.Unmarshal([]byte(s), &out) != nil {
		return nil
	}
	return out
}

// jsonArray writes keys as a JSON array, for json_each.
func jsonArray(keys []string) string {
	b, _ := json.Marshal(keys)
	return string(b)
}

// TaskChain returns what the task with key is linked to: the tasks it
// follows, as its definition names them (whether it still runs or not),
// and at most limit of the live tasks that follow it. An error wraps
// storetype.ErrNotFound when there is no such task.
func (s *Store) TaskChain(ctx context.Context, key string, limit int) (storetype.TaskChain, error) {
	var c storetype.TaskChain
	limit = clampLimit(limit)
	db, done := s.reader()
	defer done()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, fmt.Errorf("chain of %s: %w", key, err)
	}
	defer tx.Rollback()
	var host, def string
	err = tx.QueryRowContext(ctx, `SELECT host, definition FROM tasks WHERE key = ?`, key).Scan(&host, &def)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("chain of %s: %w", key, storetype.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("chain of %s: %w", key, err)
	}
	var preds []string
	var d task.Definition
	if def != "" && json.Unmarshal([]byte(def), &d) == nil {
		d.Host = host
		preds = d.Predecessors()
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM task_edges WHERE pred = ?`, key).Scan(&c.Followers); err != nil {
		return c, fmt.Errorf("chain of %s: %w", key, err)
	}
	succs, err := queryAll(ctx, tx, scanString, "successors", `SELECT succ FROM task_edges WHERE pred = ? ORDER BY succ LIMIT ?`, key, limit)
	if err != nil {
		return c, fmt.Errorf("chain of %s: %w", key, err)
	}
	nodes, err := chainNodes(ctx, tx, append(slices.Clone(preds), succs...))
	if err != nil {
		return c, fmt.Errorf("chain of %s: %w", key, err)
	}
	c.Predecessors, c.Successors = nodes[:len(preds)], nodes[len(preds):]
	return c, nil
}

// ChainGraph returns the chains among the tasks of a file or a host: at
// most f.Limit of its tasks that follow or are followed by another task,
// by key, the links between them, and the tasks outside them they are
// linked to.
func (s *Store) ChainGraph(ctx context.Context, f storetype.ChainGraphFilter) (storetype.ChainGraph, error) {
	var g storetype.ChainGraph
	var scope string
	var arg any
	switch {
	case f.Batch != "":
		scope, arg = "t.batch_id = ?", f.Batch
	case f.Host != "":
		scope, arg = "t.host = ?", f.Host
	default:
		return g, fmt.Errorf("chain graph: a file or a host: %w", storetype.ErrBadFilter)
	}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = storetype.DefaultGraphNodes
	case limit > storetype.MaxGraphNodes:
		limit = storetype.MaxGraphNodes
	}
	db, done := s.reader()
	defer done()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return g, fmt.Errorf("chain graph: %w", err)
	}
	defer tx.Rollback()
	var some bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM task_edges)`).Scan(&some); err != nil || !some {
		return g, wrapErr("chain graph", err) // no chain anywhere: nothing to read
	}
	chained := `FROM tasks t WHERE ` + scope + ` AND (t.key IN (SELECT succ FROM task_edges) OR t.key IN (SELECT pred FROM task_edges))`
	if err := tx.QueryRowContext(ctx, `SELECT count(*) `+chained, arg).Scan(&g.Chained); err != nil {
		return g, fmt.Errorf("chain graph: %w", err)
	}
	drawn, err := queryAll(ctx, tx, scanString, "chained tasks", `SELECT t.key `+chained+` ORDER BY t.key LIMIT ?`, arg, limit)
	if err != nil || len(drawn) == 0 {
		return g, wrapErr("chain graph", err)
	}
	in := jsonArray(drawn)
	linked := `FROM task_edges WHERE succ IN (SELECT value FROM json_each(?1)) OR pred IN (SELECT value FROM json_each(?1))`
	if err := tx.QueryRowContext(ctx, `SELECT count(*) `+linked, in).Scan(&g.Links); err != nil {
		return g, fmt.Errorf("chain graph: %w", err)
	}
	g.Edges, err = queryAll(ctx, tx,
		func(s scanner) (storetype.ChainEdge, error) {
			var e storetype.ChainEdge
			return e, s.Scan(&e.Pred, &e.Succ)
		}, "links", `SELECT pred, succ `+linked+` ORDER BY succ, position LIMIT ?2`, in, storetype.MaxGraphEdges)
	if err != nil {
		return g, fmt.Errorf("chain graph: %w", err)
	}
	keys := slices.Clone(drawn)
	inside := make(map[string]bool, len(drawn))
	for _, k := range drawn {
		inside[k] = true
	}
	seen := map[string]bool{}
	for _, e := range g.Edges {
		for _, k := range []string{e.Pred, e.Succ} {
			if !inside[k] && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if g.Nodes, err = chainNodes(ctx, tx, keys); err != nil {
		return g, fmt.Errorf("chain graph: %w", err)
	}
	for i := len(drawn); i < len(g.Nodes); i++ {
		g.Nodes[i].Outside = true
	}
	return g, nil
}

// wrapErr wraps err, when there is one, with what.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// chainNodes returns the tasks of keys as a chain shows them, in the
// order of keys: a key the store holds no task of has only its key.
func chainNodes(ctx context.Context, tx *sql.Tx, keys []string) ([]storetype.ChainNode, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	in := jsonArray(keys)
	// The latest execution of each task, as the task's executions are
	// listed newest first (executions_by_task).
	rows, err := tx.QueryContext(ctx, `SELECT k.value, t.key IS NOT NULL,
			coalesce(CASE WHEN t.status = 'active' AND t.paused THEN 'paused' ELSE t.status END, ''),
			coalesce(t.batch_id, ''), coalesce(t.chain, ''),
			coalesce(CASE WHEN t.chain <> '' OR json_array_length(nullif(t.definition, ''), '$.after') > 0
				THEN coalesce(json_extract(nullif(t.definition, ''), '$.on'), 'success') END, ''),
			coalesce((SELECT x.fire_id FROM executions x WHERE x.host = t.host AND x.name = t.name
				ORDER BY coalesce(x.fired_at, x.status_at) DESC, x.fire_id DESC LIMIT 1), '')
		FROM json_each(?) k LEFT JOIN tasks t ON t.key = k.value ORDER BY k.key`, in)
	if err != nil {
		return nil, err
	}
	latest := map[string]string{}
	nodes, err := collect(rows, func(s scanner) (storetype.ChainNode, error) {
		var n storetype.ChainNode
		var known bool
		var chain, fire string
		if err := s.Scan(&n.Key, &known, &n.Status, &n.Batch, &chain, &n.On, &fire); err != nil {
			return n, err
		}
		n.Chain = chainOf(chain)
		if fire != "" {
			latest[n.Key] = fire
		}
		return n, nil
	}, "chained tasks")
	if err != nil || len(latest) == 0 {
		return nodes, err
	}
	fires := make([]string, 0, len(latest))
	for _, f := range latest {
		fires = append(fires, f)
	}
	execs, err := queryAll(ctx, tx, scanExecution, "latest executions", `SELECT `+executionColumns+` FROM executions e WHERE e.fire_id IN (SELECT value FROM json_each(?))`,
		jsonArray(fires))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]storetype.Execution, len(execs))
	for _, e := range execs {
		byID[e.FireID] = e
	}
	for i := range nodes {
		if e, ok := byID[latest[nodes[i].Key]]; ok {
			nodes[i].Latest = &e
		}
	}
	return nodes, nil
}

// ExecutionRun returns what the execution fireID belongs to: its run's
// attempts, the predecessors' runs that released it, and at most limit
// of the fires its run released. An error wraps storetype.ErrNotFound
// when there is no such execution.
func (s *Store) ExecutionRun(ctx context.Context, fireID string, limit int) (storetype.ExecutionRun, error) {
	var r storetype.ExecutionRun
	limit = clampLimit(limit)
	db, done := s.reader()
	defer done()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	defer tx.Rollback()
	e, err := scanExecution(tx.QueryRowContext(ctx, `SELECT `+executionColumns+` FROM executions e WHERE e.fire_id = ?`, fireID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run of %s: %w", fireID, storetype.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	run := e.RunID()
	attempts := `SELECT ` + executionColumns + ` FROM executions e WHERE e.fire_id = ?1 OR e.run = ?1`
	if r.Attempts, err = queryAll(ctx, tx, scanExecution, "attempts", attempts+` ORDER BY e.attempt, e.fire_id`, run); err != nil {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	var planned sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT json_extract(nullif(definition, ''), '$.retry.attempts') FROM tasks WHERE key = ?`,
		e.TaskKey()).Scan(&planned); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	r.Planned = max(int(planned.Int64), 1)
	if r.NextAttempt, err = nextAttempt(ctx, tx, `run = ?`, run); err != nil {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	for _, pred := range e.After {
		last, err := scanExecution(tx.QueryRowContext(ctx, attempts+` ORDER BY e.attempt DESC, e.fire_id DESC LIMIT 1`, pred))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			last = storetype.Execution{FireID: pred}
		case err != nil:
			return r, fmt.Errorf("run of %s: %w", fireID, err)
		}
		r.ReleasedBy = append(r.ReleasedBy, last)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM execution_releases WHERE run = ?`, run).Scan(&r.ReleasedTotal); err != nil {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	r.Released, err = queryAll(ctx, tx, scanExecution, "released", `SELECT `+executionColumns+` FROM execution_releases x JOIN executions e ON e.fire_id = x.fire_id
		WHERE x.run = ? ORDER BY e.host, e.name, e.fire_id LIMIT ?`, run, limit)
	if err != nil {
		return r, fmt.Errorf("run of %s: %w", fireID, err)
	}
	return r, nil
}

// queryAll runs query with args in tx and reads every row with scan.
func queryAll[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), what, query string, args ...any) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return collect(rows, scan, what)
}

// scanString reads a row of one string.
func scanString(s scanner) (string, error) {
	var v string
	err := s.Scan(&v)
	return v, err
}
