package store

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// Limits of the list queries.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// clampLimit is the row limit a query asks for: defaultLimit when none
// is given, never more than maxLimit.
func clampLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}

// timeOf converts epoch milliseconds to UTC time.
func timeOf(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// timePtr converts a nullable epoch column.
func timePtr(ms sql.NullInt64) *time.Time {
	if !ms.Valid {
		return nil
	}
	t := timeOf(ms.Int64)
	return &t
}

// scanner is a row being read: *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

// orderOf picks the order called name, or the default when name is empty.
func orderOf(orders map[string]order, name, def string) (order, error) {
	if name == "" {
		name = def
	}
	o, ok := orders[name]
	if !ok {
		return o, fmt.Errorf("sort %q: %w", name, storetype.ErrBadFilter)
	}
	return o, nil
}

// collect scans every row of rows and closes them; what names the query
// in errors.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error), what string) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
