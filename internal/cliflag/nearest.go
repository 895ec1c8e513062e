package cliflag

import "strings"

// Nearest returns the name among names nearest to typed, for a "did you
// mean" when typed names nothing: at most one edit away for a name of up to
// four letters, two for a longer one, none for a name of one letter (any
// other letter is one edit from it), where an edit inserts, deletes or
// changes a letter or swaps two neighbours (prot is one from port), and
// case does not count. Of names equally near, the first wins.
func Nearest(typed string, names []string) (string, bool) {
	limit := 2
	switch {
	case len(typed) <= 1:
		limit = 0
	case len(typed) <= 4:
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, n := range names {
		if d := distance(strings.ToLower(typed), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best, best != ""
}

// distance is the optimal string alignment distance between a and b, in
// bytes: Levenshtein's with a swap of two neighbours counted as one edit.
func distance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
