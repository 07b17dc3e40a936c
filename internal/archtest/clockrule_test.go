package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ratelab/ratelab"

// clockRuleRoots are the directories whose code takes part in a run, each
// walked with every subdirectory (a package added under them later is
// covered without a change here).
var clockRuleRoots = []string{"engine", "strategies", "mock"}

// An allowed entry exempts one function of one package from the clock rule,
// for the reason it gives. Function literals count as part of the function
// they are written in. Fn is the function's name, or (T).M / (*T).M for a
// method.
type allowed struct {
	pkg, fn, reason string
}

// clockAllowlist is small on purpose: each entry is code that a simulated
// run never reaches, or a channel that is never waited on.
var clockAllowlist = []allowed{
	{"mock", "sleepUntil", "its timer and select are the clock.Real branch only: any other clock (a clock.Sim) returns through c.Sleep before it"},
	{"mock/internal/admission", "(*RedisStore).Acquire", redisOnly},
	{"mock/internal/admission", "(*RedisStore).heartbeat", redisOnly},
	{"mock/internal/admission", "(*RedisStore).Close", redisOnly},
	{"mock", "(*callLog).Describe", scrapeOnly},
	{"mock", "(*callLog).Collect", scrapeOnly},
	{"mock", "(serverCollector).Describe", scrapeOnly},
	{"mock", "(serverCollector).Collect", scrapeOnly},
	{"mock/mocktest", "Start", "test scaffolding, not a run: its cleanup waits for the serving goroutine it started to return after the server is closed; inside a synctest bubble a channel receive is durably blocking, so virtual time is not held"},
}

const (
	redisOnly  = "a Config.Store (Redis) is set only by cmd/mockllm --redis, the real-time server (mock.WithClock: a Store always runs in real time); loadgen, and so --virtual, never gives one"
	scrapeOnly = "prometheus.Collector: sends on the registry's channel, reached only from a /metrics scrape (promhttp's Gather), which no run makes (loadgen reads the mock's call stats in process)"
)

// A finding is one construct the clock rule forbids.
type finding struct {
	pos     token.Position
	pkg, fn string // the package's directory in the module, and the function
	what    string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s in %s.%s", f.pos.Filename, f.pos.Line, f.what, f.pkg, f.fn)
}

// timeBlocking are the time package's functions that block, or start a
// timer that a goroutine then blocks on.
var timeBlocking = map[string]bool{"Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true, "Tick": true, "NewTicker": true}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the repository root %s: %v", root, err)
	}
	return root
}

// scanClockRule parses every non-test Go file under the roots and returns
// what the clock rule forbids in them.
func scanClockRule(t *testing.T, root string, roots []string) []finding {
	t.Helper()
	var out []finding
	fset := token.NewFileSet()
	for _, r := range roots {
		err := filepath.WalkDir(filepath.Join(root, r), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			out = append(out, scanFile(fset, f, filepath.ToSlash(rel))...)
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", r, err)
		}
	}
	for i := range out {
		if rel, err := filepath.Rel(root, out[i].pos.Filename); err == nil {
			out[i].pos.Filename = filepath.ToSlash(rel)
		}
	}
	return out
}

// scanFile returns the forbidden constructs of one file of package pkg.
func scanFile(fset *token.FileSet, f *ast.File, pkg string) []finding {
	// The names the file gives the time and sync packages.
	names := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if p != "time" && p != "sync" {
			continue
		}
		name := p
		if im.Name != nil {
			name = im.Name.Name
		}
		names[name] = p
	}
	var out []finding
	var inspect func(root ast.Node, fn string)
	inspect = func(root ast.Node, fn string) {
		add := func(n ast.Node, what string) {
			out = append(out, finding{pos: fset.Position(n.Pos()), pkg: pkg, fn: fn, what: what})
		}
		ast.Inspect(root, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SendStmt:
				add(n, "a channel send")
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					add(n, "a channel receive")
				}
			case *ast.SelectStmt:
				// Its cases' sends and receives are the select's own; their
				// bodies are walked as any code.
				add(n, "a select")
				for _, c := range n.Body.List {
					for _, st := range c.(*ast.CommClause).Body {
						inspect(st, fn)
					}
				}
				return false
			case *ast.SelectorExpr:
				id, ok := n.X.(*ast.Ident)
				if !ok {
					break
				}
				switch names[id.Name] {
				case "time":
					if timeBlocking[n.Sel.Name] {
						add(n, "time."+n.Sel.Name)
					}
				case "sync":
					if n.Sel.Name == "WaitGroup" {
						add(n, "sync.WaitGroup")
					}
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			inspect(d, funcName(d))
		case *ast.GenDecl:
			inspect(d, "(package level)")
		}
	}
	return out
}

// funcName is a function's name as the allowlist writes it.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	return "(" + star + name + ")." + d.Name.Name
}

// TestClockRule: code that takes part in a run (engine/, strategies/,
// mock/ and their subpackages) never blocks on a bare channel, a timer of
// the time package or a sync.WaitGroup, except in the functions
// clockAllowlist names, each with its reason; and every entry of the
// allowlist still names a function that needs it.
func TestClockRule(t *testing.T) {
	root := repoRoot(t)
	found := scanClockRule(t, root, clockRuleRoots)
	used := make(map[allowed]bool)
	var bad []string
	for _, f := range found {
		ok := false
		for _, a := range clockAllowlist {
			if a.pkg == f.pkg && a.fn == f.fn {
				ok, used[a] = true, true
				break
			}
		}
		if !ok {
			bad = append(bad, f.String())
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("clock rule: %s: block through package clock (clock.Sleep, Wait, Chan, WaitGroup, AfterFunc), or add the function to clockAllowlist with the reason a simulated run never reaches it", b)
	}
	for _, a := range clockAllowlist {
		if a.reason == "" {
			t.Errorf("clockAllowlist: %s.%s has no reason", a.pkg, a.fn)
		}
		if !used[a] {
			t.Errorf("clockAllowlist: %s.%s has nothing the clock rule forbids any more (or was renamed); remove the entry", a.pkg, a.fn)
		}
	}
}

// TestClockRuleFinds: the scan finds each construct the rule forbids,
// under an import alias and inside function literals and select bodies,
// and names the function (a method with its receiver) it is in.
func TestClockRuleFinds(t *testing.T) {
	const src = `package p

import (
	tm "time"
	"sync"
)

type T struct{ wg sync.WaitGroup }

func (t *T) m(ch chan int) {
	go func() { ch <- 1 }()
	select {
	case v := <-ch:
		_ = v
		<-ch
	default:
	}
}

func f(ch chan int) {
	tm.Sleep(1)
	_ = tm.After(1)
	_ = tm.Now() // allowed: reads the time, does not block
	for range ch { // not seen: a range over a channel needs types
	}
}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range scanFile(fset, file, "p") {
		got = append(got, fmt.Sprintf("%d %s %s", f.pos.Line, f.fn, f.what))
	}
	want := []string{
		"8 (package level) sync.WaitGroup",
		"11 (*T).m a channel send",
		"12 (*T).m a select",
		"15 (*T).m a channel receive",
		"21 f time.Sleep",
		"22 f time.After",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("scanFile found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
