package wire

// FillerWords are the four-character tokens of the filler text: a
// three-letter word and a space, so every token is exactly four characters
// and EstimateTokens(Filler(n)) == n.
var FillerWords = [...]string{
	"the ", "lab ", "can ", "run ", "any ", "mix ", "and ", "fan ",
	"out ", "all ", "ask ", "for ", "key ", "bit ", "set ", "map ",
	"new ", "old ", "try ", "use ", "log ", "sum ", "way ", "top ",
	"low ", "end ", "far ", "now ", "may ", "get ", "put ", "win ",
}

// FillerIndex is the word at position i: the list in order, shifted by one
// word each time round so the text is not strictly periodic.
func FillerIndex(i int) int {
	n := len(FillerWords)
	return (i + i/n) % n
}
