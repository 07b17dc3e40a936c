package loadgen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
)

// cardGuide is the guide's mock with built-in rows whose report cards are
// exact in virtual time, written as the expect: keys a team would write.
//
// unbounded, retries=2 sends 200 at once: 20 are admitted and 180 arrive
// over the cap; the built-in retry rule waits exactly the retry-after, so
// the 180 come back together at 1 s (20 admitted, 160 over) and the 160 at
// 2 s (20, 140 over): 2 waves, of 180 and 160, 480 attempts over the cap.
// The 180 refused calls made 520 attempts (20 of 2, 20 of 3, 140 of 3):
// 2.89 each. Its slots were idle from 0.5 to 1 s and 1.5 to 2 s, half of
// the cap up to its last attempt at 2 s. semaphore(20) fills the cap until
// its last call at 4.5 s; semaphore(10) leaves half of it idle.
const cardGuide = `
name: card
seed: 1
items: 200
request: {provider: anthropic, model: claude-haiku-4-5, max_tokens: 100, prompt: "Classify ticket {i}."}
server:
  output: {length: max_tokens}
  latency: {per_token: 5ms}
  limits: {max_concurrent: 20, retry_after: 1s}
strategies:
  - name: unbounded, retries=2
    kind: unbounded
    max_retries: 2
    expect:
      early_retries: 0
      bad_retries: 0
      retries: 340
      retry_waves: 2
      synchronized_retries: 340
      largest_retry_wave: 180
      retry_amplification: "2.888..2.889"
      idle_capacity: 0.5
      over_limit: 480
  - name: semaphore(20)
    kind: semaphore
    n: 20
    expect:
      early_retries: 0
      bad_retries: 0
      retries: 0
      retry_waves: 0
      largest_retry_wave: 0
      retry_amplification: 0
      idle_capacity: 0
      over_limit: 0
      peak_over_limit: 0
  - name: semaphore(10)
    kind: semaphore
    n: 10
    expect:
      idle_capacity: 0.5
      over_limit: 0
`

// TestReportCardVirtual runs cardGuide in virtual time: every expectation
// holds, the card's slot-seconds are the hand-computed ones, and the
// unbounded row fails the keys a team would set to forbid retry waves and
// sending over the cap, naming the figures.
func TestReportCardVirtual(t *testing.T) {
	rep := runInline(t, "card.yaml", cardGuide)
	if f := Failures(rep); len(f) != 0 {
		t.Errorf("failures:\n%s", strings.Join(f, "\n"))
	}
	rows := byName(rep)
	for name, want := range map[string][2]float64{
		"unbounded, retries=2": {20 * 2, 20 * 1},     // 0..2 s at 20; idle 0.5..1, 1.5..2
		"semaphore(20)":        {20 * 4.5, 0},        // 0..4.5 s
		"semaphore(10)":        {20 * 9.5, 10 * 9.5}, // 0..9.5 s
	} {
		v, ok := rows[name].Server()
		if !ok || v.Card == nil {
			t.Fatalf("%s: no report card", name)
		}
		if c := v.Card; c.CapSlotSeconds != want[0] || c.IdleSlotSeconds != want[1] {
			t.Errorf("%s: cap %v, idle %v slot-seconds; want %v, %v", name, c.CapSlotSeconds, c.IdleSlotSeconds, want[0], want[1])
		}
	}

	// What a team's CI would say of the unbounded row.
	r := rows["unbounded, retries=2"]
	for key, want := range map[string]string{
		"retry_waves":             "retry_waves: expected = 0, got 2",
		"max_largest_retry_wave":  "max_largest_retry_wave: expected <= 1, got 180",
		"over_limit":              "over_limit: expected = 0, got 480",
		"max_idle_capacity":       "max_idle_capacity: expected <= 0.1, got 0.5",
		"max_retry_amplification": "max_retry_amplification: expected <= 2, got 2.888889",
	} {
		bound := "0"
		switch key {
		case "max_largest_retry_wave":
			bound = "1"
		case "max_idle_capacity":
			bound = "0.1"
		case "max_retry_amplification":
			bound = "2"
		}
		x := parseExpect(t, key+": "+bound)
		c := x[0].Check(&r)
		if got := c.Metric + ": expected " + c.Expected + ", got " + c.Actual; c.OK || got != want {
			t.Errorf("%s on the unbounded row: ok %v, %q; want failed, %q", key, c.OK, got, want)
		}
	}
}

// parseExpect parses one expect: mapping.
func parseExpect(t *testing.T, src string) Expect {
	t.Helper()
	s, err := Parse("x.yaml", []byte("items: 1\nserver: {limits: {max_concurrent: 1}}\nstrategies:\n  - {name: s, kind: semaphore, n: 1, expect: {"+src+"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s.Strategies[0].Expect
}

// TestReportCardValidate: idle_capacity without a concurrency cap is a
// validate error naming the key; with a cap from a schedule: entry, a
// model pool, the organization or long context it is measurable; on a row with no card it fails saying why rather than read 0.
func TestReportCardValidate(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`items: 1
server: {limits: {rpm: 60}}
strategies:
  - name: s
    kind: semaphore
    n: 1
    expect:
      max_idle_capacity: 0.1
`))
	if want := "t.yaml:8: strategies[0].expect.max_idle_capacity: not measurable: idle_capacity is measured against the server's concurrency caps"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse: %v\nwant an error containing %q", err, want)
	}
	if _, err := Parse("t.yaml", []byte(`items: 1
server:
  limits: {rpm: 60}
  schedule: [{at: 1s, limits: {max_concurrent: 4}}]
strategies:
  - {name: s, kind: semaphore, n: 1, expect: {max_idle_capacity: 0.1}}
`)); err != nil {
		t.Errorf("Parse with a scheduled cap: %v", err)
	}
	for _, caps := range []string{
		`limits_by_model: {"claude-sonnet-*": {max_concurrent: 2}}`,
		`organization: {limits: {max_concurrent: 8}}`,
		`long_context: {threshold_tokens: 1000, limits: {max_concurrent: 1}}`,
	} {
		if _, err := Parse("t.yaml", []byte("items: 1\nserver:\n  limits: {rpm: 60}\n  "+caps+"\nstrategies:\n  - {name: s, kind: semaphore, n: 1, expect: {max_idle_capacity: 0.1, over_limit: 0}}\n")); err != nil {
			t.Errorf("Parse with %s: %v", caps, err)
		}
	}
	e := parseExpect(t, "max_idle_capacity: 0.1")[0]
	c := e.Check(&reports.Result{ServerView: &reports.ServerView{Card: &reports.ReportCard{}}})
	if c.OK || !strings.Contains(c.Actual, "not measured (no request met a concurrency cap") {
		t.Errorf("idle_capacity without a cap: %+v, want a failed check saying not measured", c)
	}
}

// cardClient is a Python client (standard library only) that calls the
// mock one call at a time: three items, then one request whose body is
// not JSON. With --bad it retries every refusal twice at once, whatever it
// was: the spent quota's 429 and the 400 included. Without, it gives up on
// both, as a client should.
const cardClient = `import json, os, sys, urllib.request, urllib.error
bad = "--bad" in sys.argv
base = os.environ["ANTHROPIC_BASE_URL"]
key = os.environ["ANTHROPIC_API_KEY"]
def send(body):
    req = urllib.request.Request(base + "/v1/messages", data=body, method="POST", headers={
        "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
bodies = []
with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
    for line in f:
        it = json.loads(line)
        bodies.append(json.dumps({"model": os.environ["RATELAB_MODEL"], "max_tokens": it["max_tokens"],
            "messages": [{"role": "user", "content": it["prompt"]}]}).encode())
bodies.append(b'{"model": ')
for body in bodies:
    status = send(body)
    for _ in range(2 if bad else 0):
        if status == 200:
            break
        status = send(body)
`

// TestReportCardCommand runs cardClient as command rows against a quota of
// two requests: the first two items succeed, the third is refused for the
// quota, the fourth request is a 400. The bad client's retries of both are
// counted, two each, and fail the keys a team sets; the good client's
// card is clean. Calls are sequential, so the counts are exact in real
// time.
func TestReportCardCommand(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not in PATH")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.py"), []byte(cardClient), 0o644); err != nil {
		t.Fatal(err)
	}
	s := commandScenario(t, dir, `
items: 3
request: {provider: anthropic, model: claude-haiku-4-5, max_tokens: 10, prompt: "t {i}"}
server:
  latency: {per_token: 1ms}
  quota: {requests: 2}
`, `
  - name: bad
    kind: command
    command: [python3, client.py, --bad]
    expect: {completed: 2, attempts: 8, retries_after_quota: 0, retries_after_client_error: 0, max_bad_retries: 0}
  - name: good
    kind: command
    command: [python3, client.py]
    expect: {completed: 2, attempts: 4, retries_after_quota: 0, retries_after_client_error: 0, bad_retries: 0, early_retries: 0}
`)
	rep, err := Run(t.Context(), s, Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{
		"bad: retries_after_quota: expected = 0, got 2",
		"bad: retries_after_client_error: expected = 0, got 2",
		"bad: max_bad_retries: expected <= 0, got 4",
	}
	if got := Failures(rep); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v, _ := byName(rep)["bad"].Server(); v.Card == nil || v.Card.Retries != 4 {
		t.Errorf("bad: card %+v, want 4 retries", v.Card)
	}
}

// TestExpectKeysDocumented holds docs/scenarios.md's table of expect: keys
// to Metrics: every key a row can compare is in its first column, and
// every key there is one.
func TestExpectKeysDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## `expect:` keys\n")
	if !ok {
		t.Fatal("docs/scenarios.md has no section ## `expect:` keys")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	documented := map[string]bool{}
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, k := range strings.Split(cells[1], ",") {
			documented[strings.Trim(strings.TrimSpace(k), "`")] = true
		}
	}
	for k := range Metrics {
		if !documented[k] {
			t.Errorf("expect key %s is not in docs/scenarios.md's table", k)
		}
	}
	for k := range documented {
		if _, ok := Metrics[k]; !ok {
			t.Errorf("docs/scenarios.md documents %s, which is not an expect key", k)
		}
	}
}

// cardPools is a scenario whose cap changes hands: the sonnet pool's 4
// bind each request until a schedule entry lowers the key's cap to 2 at
// 2 s, below the pool's. semaphore(2) sends 40 calls of 0.5 s two at a
// time: 8 by 2 s under the pool's 4 (half of it idle, to the last call
// the pool bound at 1.5 s: 6 slot-seconds of cap, 3 idle), then 32 in 16
// waves under the key's 2, to the last arrival at 9.5 s (15 slot-seconds,
// none idle): 3 of 21 idle. Against the key's max_concurrent alone (20,
// then 2) it would read 36 of 55.
const cardPools = `
name: card-pools
seed: 1
items: 40
request: {provider: anthropic, model: claude-sonnet-4-5, max_tokens: 100, prompt: "Classify ticket {i}."}
server:
  output: {length: max_tokens}
  latency: {per_token: 5ms}
  limits: {max_concurrent: 20, retry_after: 1s}
  limits_by_model: {"claude-sonnet-*": {max_concurrent: 4}}
  schedule: [{at: 2s, limits: {max_concurrent: 2}}]
strategies:
  - name: semaphore(2)
    kind: semaphore
    n: 2
    expect:
      idle_capacity: "0.1428..0.1429"
      over_limit: 0
      retries: 0
`

// TestReportCardPoolsAndSchedule runs cardPools in virtual time: the card
// follows the cap that bound each request, the pool's and then the key's.
func TestReportCardPoolsAndSchedule(t *testing.T) {
	rep := runInline(t, "card-pools.yaml", cardPools)
	if f := Failures(rep); len(f) != 0 {
		t.Errorf("failures:\n%s", strings.Join(f, "\n"))
	}
	v, ok := byName(rep)["semaphore(2)"].Server()
	if !ok || v.Card == nil {
		t.Fatal("semaphore(2): no report card")
	}
	if c := v.Card; !c.Capped || c.CapSlotSeconds != 6+15 || c.IdleSlotSeconds != 3 {
		t.Errorf("semaphore(2): capped %v, cap %v, idle %v slot-seconds; want true, 21, 3", c.Capped, c.CapSlotSeconds, c.IdleSlotSeconds)
	}
}
