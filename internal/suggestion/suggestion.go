package suggestion

import (
	"strings"
	"unicode/utf8"
)

// Closest returns the candidate closest to name, ignoring case, if one is
// close enough to be what was meant: one edit away for names of up to four
// characters, two for longer ones. It returns "" when none is.
func Closest(name string, candidates ...string) string {
	name = strings.ToLower(name)
	limit := 1
	if utf8.RuneCountInString(name) > 4 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(name, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent runes.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	if len(s) > 64 || len(t) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}
