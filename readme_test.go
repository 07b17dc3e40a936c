package ratelab_test

// The README's examples are held to what the commands print today: the
// cheap ones (help, validate, version, a configuration error) are run and
// their output compared, and the JSON contract's keys are checked against a
// real run --format json.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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
		return len(args) > 0 && (slices.Contains([]string{"--version", "-version", "version", "help", "--help", "-h", "validate"}, args[0]) ||
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

// TestREADMEExamples runs every cheap command example of README.md, in
// README order in one directory, and compares what it prints with the
// output the README shows under it. The others (runs of a scenario in real
// time, batches, servers) are listed with -v.
func TestREADMEExamples(t *testing.T) {
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	bin := binDir
	dir := workDir(t)
	ran := 0
	for _, ex := range readmeExamples(string(md)) {
		if !cheap(ex.cmd) {
			t.Logf("README.md:%d: not run (not cheap): %s", ex.line, ex.cmd)
			continue
		}
		ran++
		got := normalize(shell(t, bin, dir, ex.cmd))
		if want := normalize(ex.want); got != want {
			t.Errorf("README.md:%d: $ %s\nREADME shows:\n%s\n\nit prints now:\n%s", ex.line, ex.cmd, want, got)
		}
	}
	// help, the heredoc, validate, mockllm --version, a bad MOCKLLM_ value
	if ran < 5 {
		t.Errorf("ran %d README examples, want at least 5: has the README's format changed?", ran)
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

// jsonContract returns the README's example of run --format json: the
// fenced json block after the sentence that introduces it.
func jsonContract(t *testing.T, md string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "`loadgen run FILE --format json` prints")
	if !ok {
		t.Fatal("README.md no longer introduces run --format json's output")
	}
	_, rest, ok = strings.Cut(rest, "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md: no json block after run --format json")
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
	md, err := os.ReadFile("README.md")
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
