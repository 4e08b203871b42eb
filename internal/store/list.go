package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// Every list pages the same way (keyset paging): a list has orders, each
// a few sort keys of which the last is unique, and a page starts right
// after (or, going back, right before) the sort keys of a row of the page
// it came from. A page costs the same at row 1 as at row 1,000,000, and a
// row recorded meanwhile neither repeats nor hides one.

// sortKey is one key of an order: an SQL expression over the list's
// table, never NULL.
type sortKey struct {
	expr string
	desc bool
}

// order is a list's order: its keys, the last one unique.
type order struct {
	name string
	keys []sortKey
}

// by is the ORDER BY clause of o, or of o reversed. Keys named as
// columns of a page (k0, k1, ...) when cols is set; with noIndex, no
// index is read for the order.
func (o order) by(reverse, cols, noIndex bool) string {
	var parts []string
	for i, k := range o.keys {
		e := k.expr
		if cols {
			e = fmt.Sprintf("k%d", i)
		}
		if noIndex {
			e = "+" + e
		}
		if k.desc != reverse {
			e += " DESC"
		}
		parts = append(parts, e)
	}
	return " ORDER BY " + strings.Join(parts, ", ")
}

// beyond is the condition of the rows that come after vals in o (before,
// when reverse), with its arguments. Its first term bounds the first
// key, so that an index on the keys starts there rather than at the
// list's first row.
func (o order) beyond(vals []any, reverse bool) (string, []any) {
	op := func(k sortKey) string {
		if k.desc != reverse {
			return "<"
		}
		return ">"
	}
	first := o.keys[0]
	cond := first.expr + " " + op(first) + "= ?"
	args := []any{vals[0]}
	var tail strings.Builder
	var targs []any
	for i := len(o.keys) - 1; i >= 0; i-- {
		k := o.keys[i]
		term := k.expr + " " + op(k) + " ?"
		if i == len(o.keys)-1 {
			tail.WriteString(term)
			targs = append(targs, vals[i])
			continue
		}
		inner := tail.String()
		tail.Reset()
		tail.WriteString("(" + term + " OR (" + k.expr + " = ? AND (" + inner + ")))")
		targs = append([]any{vals[i], vals[i]}, targs...)
	}
	return "(" + cond + " AND " + tail.String() + ")", append(args, targs...)
}

// cursor is where a page starts: after the row with these sort keys, or
// before it going back. It travels as base64 of its JSON, opaque to
// clients.
type cursor struct {
	Sort string `json:"s"`
	Back bool   `json:"b,omitempty"`
	Keys []any  `json:"k"`
	// At is the place of the page's first row, from 0, for people: "rows
	// 51–100 of 1,234".
	At int `json:"n"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor made for order o.
func decodeCursor(s string, o order) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, storetype.ErrBadCursor
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil || c.Sort != o.name || len(c.Keys) != len(o.keys) || c.At < 0 {
		return c, storetype.ErrBadCursor
	}
	for i, v := range c.Keys {
		switch v := v.(type) {
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return c, storetype.ErrBadCursor
			}
			c.Keys[i] = n
		case string:
		default:
			return c, storetype.ErrBadCursor
		}
	}
	return c, nil
}

// listQuery is one list's query: rows of table (an SQL table expression
// named alias) that match where, in order, each row read by cols, which
// may use alias's columns and subqueries: they run for the page's rows
// only.
type listQuery struct {
	table string
	alias string
	where []string
	args  []any
	order order
	// join, if set, joins more tables to the page's rows for cols.
	join string
	cols string
	// scan reads the rows that match where and sorts them, rather than
	// reading the rows in order until a page of them match: faster when
	// few match a filter no index serves (part of a name).
	scan bool
}

// whereClause joins the filter's conditions and more.
func whereClause(conds ...string) string {
	var out []string
	for _, c := range conds {
		if c != "" {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(out, " AND ")
}

// page reads the page of q that cur (empty: the first) leads to, of at
// most limit rows, and counts every row q selects, as of one moment.
func page[T any](ctx context.Context, db *sql.DB, q listQuery, cur string, limit int, scan func(scanner) (T, error)) (storetype.Page[T], error) {
	var p storetype.Page[T]
	c := cursor{Sort: q.order.name}
	if cur != "" {
		var err error
		if c, err = decodeCursor(cur, q.order); err != nil {
			return p, err
		}
	}
	limit = clampLimit(limit)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return p, err
	}
	defer tx.Rollback()

	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+q.table+` `+q.alias+whereClause(q.where...), q.args...).Scan(&p.Total); err != nil {
		return p, fmt.Errorf("count: %w", err)
	}

	conds, args := q.where, q.args
	if c.Keys != nil {
		cond, cargs := q.order.beyond(c.Keys, c.Back)
		conds = append(conds[:len(conds):len(conds)], cond)
		args = append(args[:len(args):len(args)], cargs...)
	}
	var keys []string
	for i, k := range q.order.keys {
		keys = append(keys, fmt.Sprintf("%s AS k%d", k.expr, i))
	}
	var kcols []string
	for i := range q.order.keys {
		kcols = append(kcols, fmt.Sprintf("k%d", i))
	}
	// The page is read first, by the keys alone, then its rows' columns:
	// a column's subqueries run for the rows shown, not every row sorted.
	query := `WITH page AS MATERIALIZED (SELECT ` + strings.Join(keys, ", ") + `, ` + q.alias + `.* FROM ` + q.table + ` ` + q.alias +
		whereClause(conds...) + q.order.by(c.Back, false, q.scan) + ` LIMIT ?)
		SELECT ` + strings.Join(kcols, ", ") + `, ` + q.cols + ` FROM page ` + q.alias + q.join + q.order.by(false, true, false)
	rows, err := tx.QueryContext(ctx, query, append(args, limit+1)...)
	if err != nil {
		return p, err
	}
	type keyed struct {
		keys []any
		row  T
	}
	all, err := collect(rows, func(s scanner) (keyed, error) {
		k := keyed{keys: make([]any, len(q.order.keys))}
		var err error
		k.row, err = scan(keyScanner{s, k.keys})
		return k, err
	}, "page")
	if err != nil {
		return p, err
	}
	more := len(all) > limit
	if more {
		// The extra row is the one beyond the page: the last going on,
		// the first going back.
		if c.Back {
			all = all[1:]
		} else {
			all = all[:limit]
		}
	}
	p.Rows = make([]T, 0, len(all))
	for _, k := range all {
		p.Rows = append(p.Rows, k.row)
	}
	p.Offset = c.At
	if c.Back {
		p.Offset = max(c.At-len(all), 0)
		if !more {
			p.Offset = 0 // back at the start, whatever changed meanwhile
		}
	}
	if len(all) == 0 {
		return p, nil
	}
	if (c.Back && more) || (!c.Back && c.Keys != nil) {
		p.Prev = cursor{Sort: c.Sort, Back: true, Keys: all[0].keys, At: p.Offset}.encode()
	}
	if (!c.Back && more) || c.Back {
		p.Next = cursor{Sort: c.Sort, Keys: all[len(all)-1].keys, At: p.Offset + len(all)}.encode()
	}
	return p, nil
}

// keyScanner reads a page's sort keys, then hands the rest of the row to
// the list's own scan.
type keyScanner struct {
	s    scanner
	keys []any
}

func (k keyScanner) Scan(dest ...any) error {
	all := make([]any, 0, len(k.keys)+len(dest))
	for i := range k.keys {
		all = append(all, &k.keys[i])
	}
	return k.s.Scan(append(all, dest...)...)
}

// containing is the LIKE pattern (escaped with \) of the values that
// contain v, ignoring the case of ASCII letters: what the lists' name and
// object filters match.
func containing(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(v) + "%"
}
