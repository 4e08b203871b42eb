package list

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// Pager is a list's paging as a page shows it: rows From to To of Total,
// and links to the first, previous and next pages.
type Pager struct {
	Noun                       string
	Total, From, To            int
	FirstURL, PrevURL, NextURL string
	// Shown is the number of rows of the page; Offset where it starts.
	Shown int
}

// PagerOf is the paging of page p of the list at r's URL.
func PagerOf[T any](r *http.Request, params []string, p storetype.Page[T], noun string) Pager {
	pg := Pager{Noun: noun, Total: p.Total, Shown: len(p.Rows)}
	if len(p.Rows) > 0 {
		pg.From, pg.To = p.Offset+1, p.Offset+len(p.Rows)
	}
	pg.FirstURL, pg.PrevURL, pg.NextURL = Links(r, params, p)
	return pg
}

// Line says where the page is in the list: "1,234 executions: 51–100",
// "no executions".
func (p Pager) Line() string {
	switch {
	case p.Total == 0 && p.Shown == 0:
		return "no " + p.Noun
	case p.Shown == 0:
		return Thousands(p.Total) + " " + p.Noun + ": none on this page"
	case p.From == 1 && p.To == p.Total:
		return Thousands(p.Total) + " " + p.Noun
	}
	return fmt.Sprintf("%s %s: %s–%s", Thousands(p.Total), p.Noun, Thousands(p.From), Thousands(p.To))
}

// Thousands writes n with a comma every three digits: 1,234,567.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
