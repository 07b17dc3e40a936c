package fielderr

// Suggest returns the candidate nearest to word when it is a likely
// misspelling of it (at most one edit for short words, two for longer ones;
// an edit is an insertion, a deletion, a substitution or a swap of two
// neighbours), or "". It is the few lines of the optimal string alignment
// distance rather than a dependency.
func Suggest(word string, candidates []string) string {
	limit := 1
	if len(word) >= 5 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
