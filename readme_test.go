package ratelab_test

// The examples of README.md and of every page of docs/ are held to what the
// commands print today: the cheap ones (help, validate, version, simulated
// runs, a configuration error) are run and their output compared, the JSON
// contract's keys (docs/loadgen.md) are checked against a real run --format
// json, and every relative link must name a file of the repository.

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// example is one command of a README code block, with the output shown
// under it.
type example struct {
	line int    // README line of the command
	cmd  string // what follows "$ ", with a heredoc's lines when it has one
	want string // the lines shown under it, up to the next command or the fence
}

// heredoc matches a here-document's opening (<<'EOF', <<"EOF", <<EOF),
// capturing its terminator.
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_]+)['"]?`)

// readmeExamples extracts every "$ " command of the fenced code blocks of
// the Markdown text md.
func readmeExamples(md string) []example {
	var (
		out     []example
		inBlock bool
		cur     *example
		lines   = strings.Split(md, "\n")
	)
	flush := func() {
		if cur != nil {
			cur.want = strings.TrimRight(cur.want, "\n")
			out = append(out, *cur)
			cur = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			flush()
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			flush()
			cur = &example{line: i + 1, cmd: cmd}
			if m := heredoc.FindStringSubmatch(cmd); m != nil {
				for i++; i < len(lines); i++ {
					cur.cmd += "\n" + lines[i]
					if lines[i] == m[1] {
						break
					}
				}
			}
			continue
		}
		if cur != nil {
			cur.want += l + "\n"
		}
	}
	flush()
	return out
}

// envAssignment is a leading VAR=value of a shell command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// cheap reports whether cmd runs in well under a second and needs nothing
// outside the repository: creating a file with a heredoc, loadgen's help,
// version and validate, mockllm's help and version, and mockllm refusing a
// bad environment variable (it exits before it listens).
func cheap(cmd string) bool {
	first, _, _ := strings.Cut(cmd, "\n")
	fields := strings.Fields(first)
	env := 0
	for env < len(fields) && envAssignment.MatchString(fields[env]) {
		env++
	}
	fields = fields[env:]
	if len(fields) == 0 {
		return false
	}
	args := fields[1:]
	switch fields[0] {
	case "cat":
		return heredoc.MatchString(first) && !strings.Contains(first, "|")
	case "loadgen":
		return len(args) > 0 && (slices.Contains([]string{"--version", "-version", "version", "help", "--help", "-h", "validate", "calibrate"}, args[0]) ||
			slices.Contains(args, "--help") ||
			// Simulated runs of the shipped scenarios are deterministic and
			// take under a second; examples/ holds larger ones (the 50,000
			// items of examples/tuning take half a minute: TestTuningExample
			// runs them at a tenth of the size).
			slices.Contains(args, "--virtual") && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "examples/") }))
	case "mockllm":
		return len(args) == 1 && (args[0] == "--version" || args[0] == "--help") || len(args) == 0 && env > 0
	}
	return false
}

// versionLine is what --version prints; the version, revision and Go
// version change with every build.
var versionLine = regexp.MustCompile(`(?m)^(loadgen|mockllm) \S+ \(revision \S+, go\S+\)$`)

// normalize drops trailing blanks and lines, and what changes with every
// build from version lines.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	s = strings.TrimRight(strings.Join(lines, "\n"), "\n")
	return versionLine.ReplaceAllString(s, "$1 VERSION (revision REVISION, GOVERSION)")
}

// binDir holds loadgen and mockllm, built once by TestMain.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "ratelab-readme-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		for _, name := range []string{"loadgen", "mockllm"} {
			build := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
			if out, err := build.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build ./cmd/%s: %v\n%s", name, err, out)
				return 1
			}
		}
		binDir = dir
		return m.Run()
	}())
}

// shell runs cmd with sh in dir, with the built binaries first on PATH and
// no MOCKLLM_ variable of the caller's, and returns what it printed on
// stdout and stderr, interleaved as a terminal shows them.
func shell(t *testing.T, bin, dir, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MOCKLLM_") && !strings.HasPrefix(kv, "PATH=") {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, _ := c.CombinedOutput() // the exit status is not shown in the README
	if ctx.Err() != nil {
		t.Errorf("%s: still running after 30 s", cmd)
	}
	return string(out)
}

// workDir is where the examples run: a temporary directory (files the
// examples create land there) in which scenarios/ is the repository's.
func workDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	scenarios, err := filepath.Abs("scenarios")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(scenarios, filepath.Join(dir, "scenarios")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// docFiles lists the documents whose examples and links are tested:
// README.md and every docs/*.md, README first.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The front door and the reference it links: fewer means the glob or
	// the layout broke, and the tests below would pass on nothing.
	if len(pages) < 10 {
		t.Fatalf("found %d pages in docs/, want the reference's 10 or more: %v", len(pages), pages)
	}
	slices.Sort(pages)
	return append([]string{"README.md"}, pages...)
}

// TestREADMEExamples runs every cheap command example of README.md and of
// each docs/*.md, each file's in order in one directory of its own, and
// compares what it prints with the output the document shows under it. The
// others (runs of a scenario in real time, batches, servers) are listed
// with -v.
func TestREADMEExamples(t *testing.T) {
	bin := binDir
	total, ran := 0, map[string]int{}
	for _, file := range docFiles(t) {
		md, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dir := workDir(t)
		for _, ex := range readmeExamples(string(md)) {
			total++
			if !cheap(ex.cmd) {
				t.Logf("%s:%d: not run (not cheap): %s", file, ex.line, ex.cmd)
				continue
			}
			ran[file]++
			got := normalize(shell(t, bin, dir, ex.cmd))
			if want := normalize(ex.want); got != want {
				t.Errorf("%s:%d: $ %s\n%s shows:\n%s\n\nit prints now:\n%s", file, ex.line, ex.cmd, file, want, got)
			}
		}
	}
	t.Logf("ran %v of %d examples", ran, total)
	// README: the sweep's heredoc and its tune --virtual. docs/: help,
	// validate, --virtual runs, the heredocs, mockllm --version, a bad
	// MOCKLLM_ value, and more.
	if ran["README.md"] < 2 {
		t.Errorf("ran %d README.md examples, want at least 2: has its format changed?", ran["README.md"])
	}
	sum := 0
	for _, n := range ran {
		sum += n
	}
	if sum < 12 {
		t.Errorf("ran %d examples in README.md and docs/, want at least 12: has their format changed?", sum)
	}
}

// pendingDocs are the documents other work is writing, which README.md and
// docs/README.md already link; a link to one of them is not checked until
// it exists. Remove an entry when its file lands.
var pendingDocs = map[string]bool{}

// mdLink matches an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// mdHeading matches an ATX heading, capturing its text.
var mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// slug is GitHub's anchor for a heading: lower case, letters, digits,
// '-' and '_' kept, spaces turned into '-', everything else dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdAnchors returns the anchors of the headings of Markdown text md (outside
// fenced blocks), a repeated heading's as GitHub numbers them.
func mdAnchors(md string) map[string]bool {
	out, seen, inBlock := map[string]bool{}, map[string]int{}, false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		m := mdHeading.FindStringSubmatch(l)
		if inBlock || m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// mdLinks returns the link targets of Markdown text md outside fenced
// blocks, each with its line.
func mdLinks(md string) (targets []string, lines []int) {
	inBlock := false
	for i, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
			lines = append(lines, i+1)
		}
	}
	return targets, lines
}

// TestREADMELinks: every relative link of README.md and docs/*.md names a
// file or directory of the repository (but the pendingDocs), and an anchor
// in one names a heading of the Markdown file it points into.
func TestREADMELinks(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // by repository path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = mdAnchors(string(md))
		return anchors[path]
	}
	checked := 0
	for _, file := range docFiles(t) {
		md, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		targets, lines := mdLinks(string(md))
		for i, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s:%d: %s points outside the repository", file, lines[i], target)
				continue
			}
			if pendingDocs[path] {
				if _, err := os.Stat(path); err != nil {
					continue
				}
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s:%d: %s: no such file in the repository (%s)", file, lines[i], target, path)
				continue
			}
			if frag != "" && !st.IsDir() && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", file, lines[i], target, path, frag)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d relative links in README.md and docs/, want at least 50: has the link syntax changed?", checked)
	}
}

// TestREADMELinkParsing checks the link and anchor extraction on a small
// document.
func TestREADMELinkParsing(t *testing.T) {
	md := "# Two commands\n## Simulated time: `loadgen run --virtual`\n## Two commands\n```\n# not a heading\n[no](x.md)\n```\n" +
		"see [a](docs/a.md#b-c) and [b](#two-commands), [c](https://example.com).\n"
	got := mdAnchors(md)
	for _, want := range []string{"two-commands", "two-commands-1", "simulated-time-loadgen-run---virtual"} {
		if !got[want] {
			t.Errorf("mdAnchors: no %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("mdAnchors took a line of a fenced block for a heading: %v", got)
	}
	targets, lines := mdLinks(md)
	if want := []string{"docs/a.md#b-c", "#two-commands", "https://example.com"}; !slices.Equal(targets, want) || lines[0] != 8 {
		t.Errorf("mdLinks = %v at lines %v, want %v at line 8", targets, lines, want)
	}
}

// TestREADMEExtract checks the extractor on a small document: commands and
// their output, a heredoc kept with its command, text outside fences
// ignored.
func TestREADMEExtract(t *testing.T) {
	md := "text\n$ not a command\n```\n$ loadgen --version\nloadgen v1 (revision abc, go1.26)\n$ cat > a.yaml <<'EOF'\nitems: 1\n$ x\nEOF\n" +
		"$ loadgen validate a.yaml\na.yaml: ok\n\nmore\n```\nafter\n```sh\n$ loadgen run x.yaml\n```\n"
	got := readmeExamples(md)
	want := []example{
		{4, "loadgen --version", "loadgen v1 (revision abc, go1.26)"},
		{6, "cat > a.yaml <<'EOF'\nitems: 1\n$ x\nEOF", ""},
		{10, "loadgen validate a.yaml", "a.yaml: ok\n\nmore"},
		{17, "loadgen run x.yaml", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("readmeExamples:\n%+v\nwant:\n%+v", got, want)
	}
	for cmd, want := range map[string]bool{
		"loadgen --version": true, "loadgen help run": true, "loadgen validate a.yaml": true, "loadgen run --help": true,
		"loadgen run x.yaml": false, "go run ./cmd/loadgen run scenarios/20-concurrent.yaml": false,
		"loadgen run scenarios/20-concurrent.yaml --virtual": true, "loadgen tune examples/tuning/tickets-50k.yaml --virtual": false,
		"mockllm --version": true, "MOCKLLM_MAX_CONCURRENT=ten mockllm": true, "mockllm --addr :0": false,
		"cat > a.yaml <<'EOF'\nx\nEOF": true, "cat a.yaml": false, "loadgen batch --input a --output b": false,
	} {
		if got := cheap(cmd); got != want {
			t.Errorf("cheap(%q) = %v, want %v", cmd, got, want)
		}
	}
	if got := normalize("mockllm v0.0.0-2026-abc+dirty (revision abc, go1.26.8)  \n\n"); got != "mockllm VERSION (revision REVISION, GOVERSION)" {
		t.Errorf("normalize = %q", got)
	}
}

// jsonContract returns docs/loadgen.md's example of run --format json: the
// fenced json block after the sentence that introduces it.
func jsonContract(t *testing.T, md string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "`loadgen run FILE --format json` prints")
	if !ok {
		t.Fatal("docs/loadgen.md no longer introduces run --format json's output")
	}
	_, rest, ok = strings.Cut(rest, "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/loadgen.md: no json block after run --format json")
	}
	return block
}

// jsonKeys collects every object key in a decoded JSON value.
func jsonKeys(v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			into[k] = true
			jsonKeys(x, into)
		}
	case []any:
		for _, x := range v {
			jsonKeys(x, into)
		}
	}
}

// TestREADMEJSONContract: every key of the README's (abridged) example of
// run --format json is in what a run of a small scenario prints, and
// neither has timeline, which only report.json (--out) carries.
func TestREADMEJSONContract(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("docs", "loadgen.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := jsonContract(t, string(md))
	shown := map[string]bool{}
	for _, m := range regexp.MustCompile(`"([a-z_0-9]+)":`).FindAllStringSubmatch(block, -1) {
		shown[m[1]] = true
	}
	if len(shown) < 30 {
		t.Fatalf("found %d keys in the README's json block, want the contract's 30 or more:\n%s", len(shown), block)
	}

	bin := binDir
	dir := workDir(t)
	// The README's two rows in small: unbounded with 2 retries losing
	// calls to 429s, and a semaphore at the limit.
	scenario := `name: small
items: 30
request: {max_tokens: 10}
server:
  latency: {per_token: 1ms}
  limits: {max_concurrent: 5, retry_after: 100ms}
strategies:
  - {name: "unbounded, retries=2", kind: unbounded, expect: {items: 30}}
  - {name: semaphore(5), kind: semaphore, n: 5}
`
	if err := os.WriteFile(filepath.Join(dir, "small.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(filepath.Join(bin, "loadgen"), "run", "small.yaml", "--format", "json")
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		t.Fatalf("loadgen run --format json: %v\n%s", err, out)
	}
	var doc any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("run --format json printed no JSON: %v\n%s", err, out)
	}
	printed := map[string]bool{}
	jsonKeys(doc, printed)
	var missing []string
	for k := range shown {
		if !printed[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the README's run --format json example has keys the command does not print: %s", strings.Join(missing, ", "))
	}
	for _, k := range []string{"timeline", "points", "resolution_seconds"} {
		if shown[k] || printed[k] {
			t.Errorf("%q: in the README's example %v, in run --format json %v; want in neither (report.json only)", k, shown[k], printed[k])
		}
	}
}

// repoPath matches a path of the repository as the documents and comments
// write one: segments of letters, digits, '.', '_' and '-' joined by '/',
// with an optional :LINE or :FROM-TO after it.
var repoPath = regexp.MustCompile(`(?:^|[^\w./-])((?:\.\./)*[A-Za-z_][\w.-]*(?:/[\w.-]+)+/?)(?::\d+(?:-\d+)?)?`)

// placeholder matches a path segment that stands for any name
// (mock/FORMAT_sdk_test.go).
var placeholder = regexp.MustCompile(`[A-Z]{4,}`)

// goIdent matches a Go identifier a package path is qualified with
// (provider/wire.SSEEvent).
var goIdent = regexp.MustCompile(`\.[A-Za-z_]\w*$`)

// thirdPartyPaths are paths the documents cite in another repository,
// naming it beside them, whose first directory happens to be one of ours.
var thirdPartyPaths = map[string]bool{
	"internal/requestconfig":                  true, // the SDK modules' (docs/wire.md)
	"internal/requestconfig/requestconfig.go": true,
	"internal/eventstream/codec.go":           true, // smithy-go's (docs/bedrock.md)
	"examples/azure/chat_cell23.py":           true, // openai/openai-cookbook's (docs/azure.md)
}

// topDirs are the repository's top-level directories.
func topDirs(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") || e.Name() == ".ci" {
			dirs[e.Name()] = true
		}
	}
	return dirs
}

// resolves reports whether p names a file or directory relative to one of
// dirs, read as it is, without a trailing '.' or ':', or as a package path
// with an identifier after it.
func resolves(p string, dirs ...string) bool {
	for _, q := range []string{p, strings.TrimRight(p, ".:"), goIdent.ReplaceAllString(strings.TrimRight(p, ".:"), "")} {
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, q)); err == nil {
				return true
			}
		}
	}
	return false
}

// TestDocCodePaths: every path of the repository that README.md or a page of
// docs/ writes in code spans (`mock/handle.go`, `internal/admission`) names
// a file or directory that exists, so a reader can open what the text
// cites.
func TestDocCodePaths(t *testing.T) {
	top := topDirs(t)
	span := regexp.MustCompile("`([^`]+)`")
	checked := 0
	for _, file := range docFiles(t) {
		md, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(md), "\n") {
			for _, s := range span.FindAllStringSubmatch(l, -1) {
				for _, m := range repoPath.FindAllStringSubmatch(s[1], -1) {
					p := m[1]
					if !top[strings.Split(p, "/")[0]] || strings.Contains(p, "...") || placeholder.MatchString(p) || thirdPartyPaths[p] {
						continue
					}
					checked++
					if !resolves(p, ".") {
						t.Errorf("%s:%d: `%s`: no such file or directory in the repository", file, i+1, p)
					}
				}
			}
		}
	}
	t.Logf("checked %d paths in code spans", checked)
	if checked < 150 {
		t.Errorf("checked %d paths in code spans of README.md and docs/, want at least 150: has the syntax changed?", checked)
	}
}

// TestCommentPaths: no comment of the Go code points outside the
// repository, which outside readers cannot open: no path climbs above its
// root, and every file a comment names by its path (internal/loadgen/build.go,
// docs/wire.md, a ../ path) or every Markdown document it names by its
// upper-case name (README.md) is one of the repository's, from its root or
// the comment's directory.
func TestCommentPaths(t *testing.T) {
	top := topDirs(t)
	mdName := regexp.MustCompile(`(?:^|[^\w./-])([A-Z][A-Z_-]*\.md)\b`)
	checked := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (strings.HasPrefix(n, ".") && n != ".ci" || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		for _, g := range f.Comments {
			for _, c := range g.List {
				text := httpURL.ReplaceAllString(c.Text, "")
				at := fset.Position(c.Pos())
				for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
					p := strings.TrimRight(m[1], ".:")
					if strings.HasPrefix(p, "../") {
						abs := filepath.ToSlash(filepath.Join(dir, p))
						if strings.HasPrefix(abs, "../") {
							t.Errorf("%s:%d: %s points outside the repository", path, at.Line, p)
							continue
						}
						// From the comment's directory, or from a top-level
						// one (an example relative to a scenario file).
						checked++
						if !resolves(p, append([]string{dir}, slices.Sorted(maps.Keys(top))...)...) {
							t.Errorf("%s:%d: %s: no such file in the repository", path, at.Line, p)
						}
						continue
					}
					file := strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md")
					if !file || placeholder.MatchString(p) || !top[strings.Split(p, "/")[0]] && !strings.HasSuffix(p, ".md") {
						continue
					}
					checked++
					if !resolves(p, ".", dir) {
						t.Errorf("%s:%d: %s: no such file in the repository", path, at.Line, p)
					}
				}
				for _, m := range mdName.FindAllStringSubmatch(text, -1) {
					checked++
					if !resolves(m[1], ".", dir) {
						t.Errorf("%s:%d: %s: no such document in the repository", path, at.Line, m[1])
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d paths in comments", checked)
	if checked < 100 {
		t.Errorf("checked %d paths in comments, want at least 100: has the walk or the syntax changed?", checked)
	}
}

// httpURL matches a URL, whose path is another site's.
var httpURL = regexp.MustCompile(`https?://\S+`)
