package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// An arrow is an import the boundary forbids: no package matching from may
// depend (directly or through others) on a package matching to. A pattern is
// an import path relative to the module ("engine"), a standard or external
// one ("net/http"), or either with "/..." for the package and everything
// under it.
type arrow struct {
	from, to, why string
}

// client is the client side of the tree, which shares no behaviour with the
// server (mock/...), each format's package under provider/ and the
// distributed queue under batch/ included. loadgen and cmd/loadgen are the harness that runs
// both, so they are on neither side.
var client = []string{"strategies", "provider/...", "engine", "measure", "internal/reports", "batch/...", "sharedlimit", "internal/fakeclient"}

// server is the server side.
var server = []string{"mock/...", "cmd/mockllm"}

// shared are the only packages of the module that both sides may depend
// on: vocabulary and mechanisms with neither client nor server logic.
var shared = map[string]string{
	"clock":                "the time source and blocking primitives of a run, the same for both sides (docs/time-and-tests.md)",
	"internal/durhist":     "recording durations in an HdrHistogram and reading their percentiles, so a p99 is the same figure on both sides",
	"internal/fielderr":    "errors naming a file, line and field, for any configuration",
	"internal/keyid":       "an API key's fingerprint, the one name both sides give a key",
	"internal/reportcard":  "the report card's figures, which the mock counts and loadgen reports: data, no behaviour",
	"internal/leasescript": "the Redis lease in Lua (grant, renew, epoch, quiet), vocabulary with no client or server logic",
	"internal/redact":      "hiding a URL's password in a message, the same text on both sides",
	"internal/tokenest":    "the token estimate of a text, by which the mock counts and the client budgets",
	"internal/strict":      "strict YAML decoding, for any configuration",
	"profiles":             "data: the providers' published limits, embedded",
}

// arrows are the forbidden imports, each with its reason: the boundaries
// of the package table in docs/architecture.md, enforced.
var arrows = func() []arrow {
	a := []arrow{
		{"strategies", "net/http", "the strategies are a library of admission and learning, with no transport"},
		{"strategies", "mock/...", "the strategies must not know the server they are measured against"},
		{"strategies", "gopkg.in/yaml.v3", "scenario files are loadgen's; a strategy's configuration is a Go struct"},
		{"provider", "mock/...", "the client's wire code is written from the providers' documentation, not from the mock"},
		{"provider", "engine", "provider classifies one attempt; the runtime above it is engine's"},
		{"engine", "mock/...", "the runtime runs against any server"},
		{"engine", "internal/reports", "engine produces results; rendering them is reports'"},
		{"engine", "gopkg.in/yaml.v3", "scenario files are loadgen's"},
		{"internal/reports", "mock/...", "reports render results, whatever server produced them"},
		{"internal/reports", "net/http", "reports render to files and writers, not to the network"},
		{"mock/internal/admission", "mock", "admission is a leaf: the HTTP core calls it, never the other way"},
		{"mock/internal/admission", "mock/internal/wire", "admission decides in its own terms (limits, verdicts, snapshots); the wire formats word its answers"},
		{"mock/internal/admission", "net/http", "admission has no transport"},
		{"mock/internal/admission", "mock/internal/anthropic", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/openaichat", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/openairesponses", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/gemini", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/vertexanthropic", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/bedrock", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/azure", "admission knows no wire format"},
		{"mock/internal/admission", "mock/internal/eventstream", "admission knows no wire format"},
	}
	for _, s := range server {
		for _, c := range client {
			a = append(a, arrow{s, c, "server and client share no behaviour: the experiment stays honest only if the mock knows nothing of the client"})
		}
	}
	for _, c := range client {
		a = append(a, arrow{c, "mock/...", "server and client share no behaviour: the client must not reuse the mock's code"})
	}
	return a
}()

// A pkg is one package of the module: its path relative to the module (or
// as is, outside it) and every package it depends on, directly or not,
// outside its tests.
type pkg struct {
	path string
	deps []string
}

// match reports whether path matches pattern.
func match(pattern, path string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == p || strings.HasPrefix(path, p+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// violations returns, for pkgs, each forbidden arrow that one of them
// follows, and each module package that both sides depend on without being
// shared, as messages naming the arrow.
func violations(pkgs []pkg, moduleOwn map[string]bool) []string {
	var out []string
	usedBy := map[string][2][]string{} // a module package → the server and client packages depending on it
	for _, p := range pkgs {
		deps := append([]string{}, p.deps...)
		sort.Strings(deps)
		for _, a := range arrows {
			if !match(a.from, p.path) {
				continue
			}
			for _, d := range deps {
				if match(a.to, d) {
					out = append(out, fmt.Sprintf("forbidden arrow %s → %s: %s imports %s (%s)", a.from, a.to, p.path, d, a.why))
				}
			}
		}
		side := -1
		switch {
		case matchAny(server, p.path):
			side = 0
		case matchAny(client, p.path):
			side = 1
		}
		if side < 0 {
			continue
		}
		for _, d := range deps {
			if moduleOwn[d] {
				u := usedBy[d]
				u[side] = append(u[side], p.path)
				usedBy[d] = u
			}
		}
	}
	var both []string
	for d, u := range usedBy {
		if len(u[0]) > 0 && len(u[1]) > 0 && shared[d] == "" && !matchAny(server, d) && !matchAny(client, d) {
			both = append(both, fmt.Sprintf("%s is imported by the server (%s) and by the client (%s): server and client share no behaviour; only the leaf vocabulary packages (archtest.shared) may be on both sides", d, strings.Join(u[0], ", "), strings.Join(u[1], ", ")))
		}
	}
	sort.Strings(both)
	return append(out, both...)
}

// listModule runs go list over the module, returning its packages and the
// set of its own package paths (relative to the module).
func listModule(t *testing.T) ([]pkg, map[string]bool) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import-boundary test runs go list: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Deps,Error", "./...")
	cmd.Dir = repoRoot(t)
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	own := map[string]bool{}
	dec := json.NewDecoder(outPipe)
	for {
		var p struct {
			ImportPath string
			Deps       []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: decoding its output: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		var deps []string
		for _, d := range p.Deps {
			if r, ok := strings.CutPrefix(d, module+"/"); ok {
				d = r
			}
			deps = append(deps, d)
		}
		pkgs = append(pkgs, pkg{path: rel, deps: deps})
		own[rel] = true
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return pkgs, own
}

// TestImportBoundary: no package of the module follows a forbidden arrow,
// and the only module packages both the server and the client depend on are
// the shared leaf vocabulary ones.
func TestImportBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	pkgs, own := listModule(t)
	for _, want := range []string{"mock", "strategies", "engine", "provider", "internal/reports"} {
		if !own[want] {
			t.Fatalf("go list found no package %s: the boundary would check nothing", want)
		}
	}
	for _, v := range violations(pkgs, own) {
		t.Error(v)
	}
	for p := range shared {
		if !own[p] {
			t.Errorf("shared names %s, which is not a package of the module any more; remove it", p)
		}
	}
}

// TestImportBoundaryNamesTheArrow: a graph that breaks the rules is
// reported arrow by arrow, each message naming it.
func TestImportBoundaryNamesTheArrow(t *testing.T) {
	own := map[string]bool{"mock/admission": true, "strategies": true, "engine": true, "internal/helper": true, "clock": true, "provider": true}
	got := violations([]pkg{
		{"mock/admission", []string{"strategies", "clock", "internal/helper"}},
		{"strategies", []string{"clock", "net/http"}},
		{"engine", []string{"provider", "gopkg.in/yaml.v3", "internal/helper"}},
	}, own)
	want := []string{
		"forbidden arrow mock/... → strategies: mock/admission imports strategies",
		"forbidden arrow strategies → net/http: strategies imports net/http",
		"forbidden arrow engine → gopkg.in/yaml.v3: engine imports gopkg.in/yaml.v3",
		"internal/helper is imported by the server (mock/admission) and by the client (engine)",
	}
	if len(got) != len(want) {
		t.Fatalf("violations = %d messages, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("message %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}
