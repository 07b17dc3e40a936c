package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxDocWords bounds the first paragraph of a package doc, which says the
// package's one job in at most two sentences; the rest of the prose goes in
// later paragraphs (of doc.go when it is long).
const maxDocWords = 50

// A pkgDoc is one package directory's package comment, as go doc shows it.
type pkgDoc struct {
	dir, name string
	files     []string // the files carrying a package comment
	text      string
	testOnly  bool // the directory holds only tests
}

// packageDocs parses the package clause and comments of every Go file under
// root (skipping testdata, node_modules and hidden directories, as go list
// does) and returns one pkgDoc per package directory. Test files do not
// count: go doc shows only the package comment of the others.
func packageDocs(t *testing.T, root string) []pkgDoc {
	t.Helper()
	type acc struct {
		doc, testDoc pkgDoc
	}
	byDir := map[string]*acc{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		a := byDir[dir]
		if a == nil {
			a = &acc{}
			byDir[dir] = a
		}
		p := &a.doc
		name := f.Name.Name
		if strings.HasSuffix(path, "_test.go") {
			p = &a.testDoc
			name = strings.TrimSuffix(name, "_test")
		}
		p.dir, p.name = dir, name
		if f.Doc != nil {
			p.files = append(p.files, filepath.Base(path))
			p.text += f.Doc.Text()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []pkgDoc
	for _, a := range byDir {
		p := a.doc
		if p.name == "" { // only tests: go doc shows nothing
			p = pkgDoc{dir: a.testDoc.dir, name: a.testDoc.name, testOnly: true}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}

// sentenceEnd is the end of a sentence: a full stop, question or exclamation
// mark (with any closing quote or bracket) before a space or the end.
var sentenceEnd = regexp.MustCompile(`[.?!]["')\]]*(\s|$)`)

// abbreviations end in a full stop without ending a sentence.
var abbreviations = strings.NewReplacer("e.g.", "eg", "i.e.", "ie", "etc.", "etc", "vs.", "vs", "cf.", "cf")

// sentences counts the sentences of a paragraph.
func sentences(par string) int {
	return len(sentenceEnd.FindAllString(abbreviations.Replace(par), -1))
}

// docProblem returns what is wrong with p's package comment, or "".
func docProblem(p pkgDoc) string {
	if p.testOnly {
		return "holds only tests, so go doc shows no package: add a doc.go with its package comment, starting \"Package " + p.name + " \""
	}
	if p.text == "" {
		return "has no package comment (write one in doc.go, starting \"Package " + p.name + " \")"
	}
	if len(p.files) > 1 {
		return "has a package comment in more than one file (" + strings.Join(p.files, ", ") + "); go doc joins them: keep one, in doc.go"
	}
	want := "Package " + p.name + " "
	if p.name == "main" {
		want = "Command "
	}
	if !strings.HasPrefix(p.text, want) {
		first, _, _ := strings.Cut(p.text, "\n")
		return "package comment " + p.files[0] + " starts " + quote(first) + ", want it to start " + quote(want)
	}
	par, _, _ := strings.Cut(p.text, "\n\n")
	par = strings.Join(strings.Fields(par), " ")
	if n := sentences(par); n > 2 {
		return "package comment's first paragraph (" + p.files[0] + ") has " + itoa(n) + " sentences: say the package's one job in at most two, and move the rest to a later paragraph"
	}
	if n := len(strings.Fields(par)); n > maxDocWords {
		return "package comment's first paragraph (" + p.files[0] + ") has " + itoa(n) + " words, more than " + itoa(maxDocWords) + ": say the package's one job in two short sentences, and move the rest to a later paragraph"
	}
	return ""
}

func quote(s string) string { return `"` + s + `"` }

func itoa(n int) string { return strconv.Itoa(n) }

// TestPackageDocs: every package of the module (commands, test-only
// packages and internal ones included) has one package comment, which
// starts "Package NAME " ("Command " for a main package) and says the
// package's one job in a first paragraph of at most two sentences and
// maxDocWords words, as golang.org/x/time/rate's "Package rate provides a
// rate limiter." does.
func TestPackageDocs(t *testing.T) {
	docs := packageDocs(t, repoRoot(t))
	if len(docs) < 20 {
		t.Fatalf("found %d packages: the walk checks almost nothing", len(docs))
	}
	for _, p := range docs {
		if msg := docProblem(p); msg != "" {
			dir := p.dir
			if dir == "." {
				dir = "the module's root"
			}
			t.Errorf("%s: %s", dir, msg)
		}
	}
}

// TestPackageDocProblems: each rule of TestPackageDocs fails on a comment
// that breaks it, naming the problem.
func TestPackageDocProblems(t *testing.T) {
	for _, tt := range []struct {
		p    pkgDoc
		want string // a part of the message; "" for none
	}{
		{pkgDoc{name: "rate", files: []string{"doc.go"}, text: "Package rate provides a rate limiter.\n"}, ""},
		{pkgDoc{name: "main", files: []string{"main.go"}, text: "Command mockllm serves a mock. It enforces limits, e.g. RPM.\n\nMore. And more. And more.\n"}, ""},
		{pkgDoc{name: "rate"}, "has no package comment"},
		{pkgDoc{name: "inflight", testOnly: true}, "holds only tests"},
		{pkgDoc{name: "rate", files: []string{"a.go", "b.go"}, text: "Package rate x.\nPackage rate y.\n"}, "more than one file (a.go, b.go)"},
		{pkgDoc{name: "rate", files: []string{"doc.go"}, text: "Rate limits.\n"}, `starts "Rate limits.", want it to start "Package rate "`},
		{pkgDoc{name: "main", files: []string{"main.go"}, text: "Package main runs.\n"}, `want it to start "Command "`},
		{pkgDoc{name: "rate", files: []string{"doc.go"}, text: "Package rate limits. It waits.\nIt learns (docs/x.md).\n"}, "has 3 sentences"},
		{pkgDoc{name: "rate", files: []string{"doc.go"}, text: "Package rate" + strings.Repeat(" word", maxDocWords) + ".\n"}, "more than " + itoa(maxDocWords)},
	} {
		got := docProblem(tt.p)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("docProblem(%q) = %q, want it to contain %q", tt.p.text, got, tt.want)
		}
	}
}
