package loadgen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

const minimal = `name: t
items: 10
server:
  limits: {max_concurrent: 5, retry_after: 1s}
strategies:
  - {name: s, kind: semaphore, n: 5}
`

func TestParseDefaults(t *testing.T) {
	s, err := Parse("t.yaml", []byte(minimal))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"seed", s.Seed, int64(DefaultSeed)},
		{"provider", s.Request.Provider, "anthropic"},
		{"model", s.Request.Model, DefaultModel},
		{"max_tokens", s.Request.MaxTokens, 100},
		{"api_key", s.Request.APIKey, DefaultAPIKey},
		{"timeline", s.Timeline, 100 * time.Millisecond},
		{"workers", s.Workers, 10},
		{"items", s.Items.Count(), 10},
		{"max_retries", s.Strategies[0].Retries(), 2},
		{"per_token", s.Server.Latency.PerToken, 5 * time.Millisecond},
		{"server max_concurrent", s.Server.Limits.MaxConcurrent, 5},
		{"oracle seconds", s.OracleSeconds(), 1.0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParseItemForms(t *testing.T) {
	tests := []struct {
		name   string
		items  string
		counts []int
	}{
		{"count", "items: 7", []int{7}},
		{"mapping", "items: {count: 3, max_tokens: 10}", []int{3}},
		{"groups", "items:\n  - {count: 2, provider: openai}\n  - {count: 5}", []int{2, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(minimal, "items: 10", tt.items, 1)
			s, err := Parse("t.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []int
			for _, g := range s.Items.Groups {
				got = append(got, g.Count)
			}
			if len(got) != len(tt.counts) {
				t.Fatalf("groups = %v, want %v", got, tt.counts)
			}
			for i := range got {
				if got[i] != tt.counts[i] {
					t.Errorf("groups = %v, want %v", got, tt.counts)
				}
			}
		})
	}
}

// TestParseErrors is the table of bad scenarios and the message each gives:
// every one names the file, the line and the key.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"wrong type", "items: 10\nstrategies:\n  - name: a\n    kind: unbounded\n  - name: b\n    kind: unbounded\n  - name: c\n    kind: unbounded\n    max_retries: ten\n",
			`x.yaml:9: strategies[2].max_retries: want an integer, got "ten"`},
		{"unknown top-level key", "items: 10\nitmes: 3\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: itmes: unknown key "itmes" (did you mean items?)`},
		{"unknown key far from any", "items: 10\nbogus: 3\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: bogus: unknown key "bogus" (want one of arrival, description, items, name, oracle, request, seed, server, strategies, target, timeline, workers)`},
		{"unknown row key", "items: 10\nstrategies:\n  - name: a\n    kind: semaphore\n    nn: 5\n",
			`x.yaml:5: strategies[0].nn: unknown key "nn" (did you mean n?)`},
		{"unknown server key", "items: 10\nserver:\n  limits:\n    max_concurent: 20\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:4: server.limits.max_concurent: unknown key "max_concurent" (did you mean max_concurrent?)`},
		{"server wrong type", "items: 10\nserver:\n  latency: {per_token: fast}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:3: server.latency.per_token: want a duration like 500ms or 1s, got "fast"`},
		{"server integer", "items: 10\nserver:\n  limits:\n    rpm: abc\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:4: server.limits.rpm: want an integer, got "abc"`},
		{"server semantic", "items: 10\nserver:\n  limits: {rpm: -1}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:3: server.limits.rpm: must not be negative, got -1`},
		{"server distribution", "items: 10\nserver:\n  output: {tokens: lots}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:3: server.output.tokens: invalid output distribution "lots"`},
		{"unknown kind", "items: 10\nstrategies:\n  - name: a\n    kind: magic\n",
			`x.yaml:4: strategies[0].kind: unknown kind "magic" (want one of adaptive, aimd, aimd-delay, batch-api, command, per-provider, semaphore, token-bucket, token-first, unbounded)`},
		{"parameter of another kind", "items: 10\nstrategies:\n  - name: a\n    kind: unbounded\n    n: 5\n",
			`x.yaml:5: strategies[0].n: not a parameter of kind unbounded (its parameters: none)`},
		{"negative", "items: 10\nstrategies:\n  - name: a\n    kind: semaphore\n    n: -3\n",
			`x.yaml:5: strategies[0].n: must not be negative, got -3`},
		{"negative retries", "items: 10\nstrategies:\n  - {name: a, kind: unbounded, max_retries: -2}\n",
			`x.yaml:3: strategies[0].max_retries: must be -1 (retry until success) or more, got -2`},
		{"duplicate names", "items: 10\nstrategies:\n  - {name: a, kind: unbounded}\n  - {name: a, kind: unbounded}\n",
			`x.yaml:4: strategies[1].name: duplicate strategy name "a" (also strategies[0])`},
		{"duplicate key", "items: 10\nitems: 11\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: items: duplicate key`},
		{"missing items", "strategies: [{name: a, kind: unbounded}]\n",
			`x.yaml: items: required`},
		{"zero items", "items: 0\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:1: items.count: must be positive, got 0`},
		{"no strategies", "items: 3\n",
			`x.yaml: strategies: required`},
		{"semaphore without n", "items: 3\nstrategies:\n  - name: a\n    kind: semaphore\n",
			`x.yaml:3: strategies[0].n: required`},
		{"unknown metric", "items: 3\nstrategies:\n  - name: a\n    kind: unbounded\n    expect:\n      complete: 3\n",
			`x.yaml:6: strategies[0].expect.complete: unknown metric`},
		{"bad range", "items: 3\nstrategies:\n  - name: a\n    kind: unbounded\n    expect:\n      completed: \"9..3\"\n",
			`x.yaml:6: strategies[0].expect.completed: invalid range "9..3": 9 is above 3`},
		{"bound with range", "items: 3\nstrategies:\n  - name: a\n    kind: unbounded\n    expect:\n      max_wall_over_oracle: \"1..2\"\n",
			`x.yaml:6: strategies[0].expect.max_wall_over_oracle: max_wall_over_oracle is a bound: want a number`},
		{"bad provider", "items: 3\nrequest: {provider: no-such-provider}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: request.provider: unknown provider "no-such-provider" (want anthropic, azure-openai, bedrock, gemini, openai, openai-responses, vertex, vertex-anthropic)`},
		{"per-provider limits", "items: 3\nstrategies:\n  - name: a\n    kind: per-provider\n    limits: {anthropic: 0}\n",
			`x.yaml:5: strategies[0].limits.anthropic: must be positive, got 0`},
		{"target url", "items: 3\ntarget: {url: localhost:8080}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: target.url: must start with http:// or https://`},
		{"server with target", "items: 3\ntarget: {url: \"http://localhost:8080\", api_key_env: K}\nserver: {limits: {max_concurrent: 5}}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:3: server: has no effect with target: (the run goes to target.url, not the embedded mock); remove one of them`},
		{"key the mock refuses", "items: 3\nrequest: {api_key: k2}\nserver: {api_keys: [k1]}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: request.api_key: "k2" is not one of server.api_keys`},
		{"groups sharing a model", "items:\n  - {count: 1, provider: openai, model: m}\n  - {count: 1, provider: anthropic, model: m}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:3: items[1].model: model "m" is used by another group`},
		{"list for mapping", "items: 3\nrequest: [1, 2]\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: request: want a mapping, got a list`},
		{"mapping for scalar", "items: 3\nseed: {a: 1}\nstrategies: [{name: a, kind: unbounded}]\n",
			`x.yaml:2: seed: want an integer, got a mapping`},
		{"fraction for an integer", "items: 10\nstrategies:\n  - {name: a, kind: semaphore, n: 2.5}\n",
			`x.yaml:3: strategies[0].n: want an integer, got 2.5`},
		{"kind's duration", "items: 10\nstrategies:\n  - {name: a, kind: aimd-delay, cooldown: 5}\n",
			`x.yaml:3: strategies[0].cooldown: want a duration like 500ms or 1s, got 5`},
		{"token-first without tpm", "items: 10\nstrategies:\n  - {name: a, kind: token-first, n: 5}\n",
			`x.yaml:3: strategies[0].tpm: required`},
		{"bad decrease", "items: 10\nstrategies:\n  - {name: a, kind: aimd, decrease: -1}\n",
			`x.yaml:3: strategies[0].decrease: must be between 0 and 1 exclusive, got -1`},
		{"syntax", "items: 3\n  bad: [\n",
			`x.yaml:2: invalid YAML:`},
		{"not a mapping", "- 1\n- 2\n",
			`x.yaml:1: a scenario must be a mapping`},
		{"empty", "",
			`x.yaml: empty scenario`},
		{"two documents", "items: 3\n---\nitems: 4\n",
			`x.yaml:3: more than one YAML document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error:\n  %s\nwant it to contain:\n  %s", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "x.yaml" {
				t.Errorf("error %v is not a *Error naming the file", err)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := "items: 3\nitmes: 4\nstrategies:\n  - {name: a, kind: unbounded, max_retries: x}\n  - {name: b, kind: semaphore, n: y}\n"
	_, err := Parse("x.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse error %v is not Errors", err)
	}
	if len(errs) != 3 {
		t.Errorf("got %d problems, want 3:\n%v", len(errs), err)
	}
}

// TestValidateEveryProblem: a wrong type does not hide the problems of the
// rest of the file (an unknown kind, a duplicate name, a negative n, a bad
// server value), and each key gets exactly one message.
func TestValidateEveryProblem(t *testing.T) {
	src := `items: 3
server:
  limits: {rpm: abc, itpm: -1}
strategies:
  - {name: a, kind: unbounded, max_retries: x}
  - {name: b, kind: magic}
  - {name: a, kind: semaphore, n: -3}
  - {name: c, kind: token-bucket, rpm: lots}
  - {name: d, kind: semaphore, n: y}
`
	_, err := Parse("x.yaml", []byte(src))
	want := []string{
		`x.yaml:3: server.limits.rpm: want an integer, got "abc"`,
		`x.yaml:3: server.limits.itpm: must not be negative, got -1`,
		`x.yaml:5: strategies[0].max_retries: want an integer, got "x"`,
		`x.yaml:6: strategies[1].kind: unknown kind "magic" (want one of adaptive, aimd, aimd-delay, batch-api, command, per-provider, semaphore, token-bucket, token-first, unbounded)`,
		`x.yaml:7: strategies[2].name: duplicate strategy name "a" (also strategies[0])`,
		`x.yaml:7: strategies[2].n: must not be negative, got -3`,
		`x.yaml:8: strategies[3].rpm: want a number, got "lots"`,
		`x.yaml:9: strategies[4].n: want an integer, got "y"`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Parse error:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

// TestServerMessagesMatchMock: a mistake in a scenario's server: block gets
// the message mockllm --config gives for the same mistake, only placed
// under server.
func TestServerMessagesMatchMock(t *testing.T) {
	for _, block := range []string{
		"limits:\n  rpm: abc\n",
		"limits:\n  rmp: 5\n",
		"latency:\n  per_token: 5\n",
		"limits:\n  rpm: -1\n",
		"faults:\n  error_500: 2\n",
		"output:\n  tokens: lots\n",
		"schedule:\n  - at: 10s\n    limits: {rpm: -3}\n",
	} {
		_, merr := mock.ParseConfig([]byte(block), "m.yaml")
		indented := "  " + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n  ") + "\n"
		_, serr := Parse("s.yaml", []byte("items: 1\nstrategies: [{name: a, kind: unbounded}]\nserver:\n"+indented))
		if merr == nil || serr == nil {
			t.Fatalf("%q: mock %v, scenario %v: want both to fail", block, merr, serr)
		}
		var me, se *Error
		if !errors.As(merr, &me) || !errors.As(serr, &se) {
			t.Fatalf("%q: %v / %v are not typed errors", block, merr, serr)
		}
		if se.Path != "server."+me.Path || se.Message != me.Message || se.Line != me.Line+3 {
			t.Errorf("%q:\nmockllm --config: %v\nscenario:         %v\nwant the same message at server.%s", block, merr, serr, me.Path)
		}
	}
}

// TestLoadTooLarge: a scenario file over 4 MiB is refused before parsing,
// with a message naming the file and the limit.
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte(minimal + strings.Repeat("# padding to make the file large\n", 150_000))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || err.Error() != path+": file larger than 4 MiB, the limit for a configuration file; is it the right file?" {
		t.Errorf("Load(%d bytes) = %v", len(data), err)
	}
	if _, err := LoadBatchConfig(path); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("LoadBatchConfig(%d bytes) = %v", len(data), err)
	}
}

// TestShippedScenariosParse checks every file under scenarios/ parses and validates.
func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "#") {
				t.Errorf("%s does not start with a comment saying what it shows", f)
			}
			s, err := Parse(f, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for _, st := range s.Strategies {
				if len(st.Expect) == 0 {
					t.Errorf("strategy %q has no expectations", st.Name)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("items: {count: 3}\nstrategies: [{name: a, kind: aimd, expect: {completed: \"1..2\"}}]"))
	f.Add([]byte("items: [{count: 1}, {count: 2, provider: openai}]\nserver: {schedule: [{at: 1s, limits: {max_concurrent: 3}}]}"))
	f.Add([]byte("a: &x [*x]"))
	f.Add([]byte("items: 3\narrival: {rate: 10/s, process: constant}\nstrategies: [{name: a, kind: aimd, initial: {sweep: [1, 2]}, decrease: {sweep: \"0.5..0.9 step 0.2\"}}]"))
	f.Add([]byte("arrival: {rate: 600/m, duration: 1s}\nstrategies: [{name: s, kind: semaphore, n: {sweep: \"1..3\"}, max_retries: {sweep: [0, -1]}}]"))
	f.Add([]byte("items: &n 3\nseed: *n\nstrategies: [&s {name: a, kind: unbounded}]\n"))
	if files, _ := filepath.Glob("../../scenarios/*.yaml"); len(files) > 0 {
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err == nil && (s == nil || len(s.Strategies) == 0 || s.Items.Count() <= 0) {
			t.Fatalf("Parse accepted an invalid scenario: %+v", s)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
