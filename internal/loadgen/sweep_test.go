package loadgen

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// sweepScenario is a scenario whose strategies are rows.
func sweepScenario(rows string) string {
	return "name: t\nitems: 10\nserver:\n  limits: {max_concurrent: 5, retry_after: 1s}\nstrategies:\n" + rows
}

func TestSweepExpansion(t *testing.T) {
	tests := []struct {
		name  string
		rows  string
		names []string
		// value reads the swept parameter of a row.
		value func(*Row) any
		want  []any
	}{
		{
			"list", "  - {name: sem, kind: semaphore, n: {sweep: [5, 10, 20, 40]}}\n",
			[]string{"sem n=5", "sem n=10", "sem n=20", "sem n=40"},
			func(r *Row) any { return r.Config.(*strategies.SemaphoreConfig).Max },
			[]any{5, 10, 20, 40},
		},
		{
			"range", "  - {name: sem, kind: semaphore, n: {sweep: \"5..50 step 15\"}}\n",
			[]string{"sem n=5", "sem n=20", "sem n=35", "sem n=50"},
			func(r *Row) any { return r.Config.(*strategies.SemaphoreConfig).Max },
			[]any{5, 20, 35, 50},
		},
		{
			"range without step, end not on a step", "  - {name: sem, kind: semaphore, n: {sweep: \"3..5\"}}\n",
			[]string{"sem n=3", "sem n=4", "sem n=5"},
			func(r *Row) any { return r.Config.(*strategies.SemaphoreConfig).Max },
			[]any{3, 4, 5},
		},
		{
			"placeholder in the name", "  - {name: \"semaphore({n})\", kind: semaphore, n: {sweep: [5, 10]}}\n",
			[]string{"semaphore(5)", "semaphore(10)"},
			func(r *Row) any { return r.Config.(*strategies.SemaphoreConfig).Max },
			[]any{5, 10},
		},
		{
			"max_retries", "  - {name: u, kind: unbounded, max_retries: {sweep: [-1, 0, 2]}}\n",
			[]string{"u max_retries=-1", "u max_retries=0", "u max_retries=2"},
			func(r *Row) any { return r.Retries() },
			[]any{-1, 0, 2},
		},
		{
			"float range without drift", "  - {name: a, kind: aimd, decrease: {sweep: \"0.5..0.9 step 0.1\"}}\n",
			[]string{"a decrease=0.5", "a decrease=0.6", "a decrease=0.7", "a decrease=0.8", "a decrease=0.9"},
			func(r *Row) any { return r.Config.(*strategies.AIMDConfig).Decrease },
			[]any{0.5, 0.6, 0.7, 0.8, 0.9},
		},
		{
			"adaptive's parameter", "  - {name: ad, kind: adaptive, probe_after: {sweep: [1, 2.5]}}\n",
			[]string{"ad probe_after=1", "ad probe_after=2.5"},
			func(r *Row) any { return r.Config.(*adaptiveSettings).ProbeAfter },
			[]any{1.0, 2.5},
		},
		{
			"duration range", "  - {name: d, kind: aimd-delay, initial_delay: {sweep: \"1s..2s step 500ms\"}}\n",
			[]string{"d initial_delay=1s", "d initial_delay=1.5s", "d initial_delay=2s"},
			func(r *Row) any { return r.Config.(*strategies.AIMDDelayConfig).Initial },
			[]any{time.Second, 1500 * time.Millisecond, 2 * time.Second},
		},
		{
			"two sweeps: every combination, the first slowest",
			"  - {name: a, kind: aimd, initial: {sweep: [2, 4]}, max: {sweep: [10, 20]}}\n",
			[]string{"a initial=2 max=10", "a initial=2 max=20", "a initial=4 max=10", "a initial=4 max=20"},
			func(r *Row) any {
				c := r.Config.(*strategies.AIMDConfig)
				return [2]int{c.Initial, c.Max}
			},
			[]any{[2]int{2, 10}, [2]int{2, 20}, [2]int{4, 10}, [2]int{4, 20}},
		},
		{
			"rows around a sweep keep their places",
			"  - {name: first, kind: unbounded}\n  - {name: s, kind: semaphore, n: {sweep: [1, 2]}}\n  - {name: last, kind: semaphore, n: 3}\n",
			[]string{"first", "s n=1", "s n=2", "last"},
			func(r *Row) any { return r.Kind },
			[]any{"unbounded", "semaphore", "semaphore", "semaphore"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte(sweepScenario(tt.rows)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var names []string
			var values []any
			for i := range s.Strategies {
				names = append(names, s.Strategies[i].Name)
				values = append(values, tt.value(&s.Strategies[i]))
			}
			if !reflect.DeepEqual(names, tt.names) {
				t.Errorf("names = %q, want %q", names, tt.names)
			}
			if !reflect.DeepEqual(values, tt.want) {
				t.Errorf("values = %v, want %v", values, tt.want)
			}
		})
	}
}

// TestSweepRowsIndependent checks that the rows of a sweep share nothing:
// each has its own configuration, its parameters in Params and Sweep.
func TestSweepRowsIndependent(t *testing.T) {
	s, err := Parse("t.yaml", []byte(sweepScenario("  - {name: s, kind: semaphore, n: {sweep: [5, 10]}, max_retries: 4}\n")))
	if err != nil {
		t.Fatal(err)
	}
	a, b := &s.Strategies[0], &s.Strategies[1]
	if a.Config == b.Config {
		t.Fatal("the rows of a sweep share one configuration")
	}
	if got := b.Params(); got["n"] != 10 || got["max_retries"] != 4 {
		t.Errorf("Params() = %v, want n 10 and max_retries 4", got)
	}
	want := []Swept{{Key: "n", Value: "10", Number: 10}}
	if !reflect.DeepEqual(b.Sweep, want) {
		t.Errorf("Sweep = %+v, want %+v", b.Sweep, want)
	}
	if s.Strategies[0].Config.(*strategies.SemaphoreConfig).Max != 5 {
		t.Errorf("the first row's n changed with the second's")
	}
}

func TestSweepErrors(t *testing.T) {
	tests := []struct {
		name string
		row  string
		want string // FILE:LINE: key: message (a part of it)
	}{
		{"non-numeric parameter", "  - {name: s, kind: semaphore, n: 2, requeue: {sweep: [true, false]}}",
			"t.yaml:6: strategies[0].requeue: sweep: requeue is not numeric (it takes true or false)"},
		{"string parameter", "  - {name: s, kind: adaptive, state_file: {sweep: [a, b]}}",
			"t.yaml:6: strategies[0].state_file: sweep: state_file is not numeric (it takes a string)"},
		{"empty range", "  - {name: s, kind: semaphore, n: {sweep: \"50..5 step 5\"}}",
			"t.yaml:6: strategies[0].n: sweep: empty range 50..5: its start is above its end"},
		{"zero step", "  - {name: s, kind: semaphore, n: {sweep: \"5..50 step 0\"}}",
			"t.yaml:6: strategies[0].n: sweep: step must be positive, got 0"},
		{"fractional step of an integer", "  - {name: s, kind: semaphore, n: {sweep: \"5..50 step 2.5\"}}",
			`t.yaml:6: strategies[0].n: sweep: step: want an integer, got "2.5"`},
		{"not a range", "  - {name: s, kind: semaphore, n: {sweep: \"5 to 50\"}}",
			`t.yaml:6: strategies[0].n: sweep: want a list [5, 10, 20] or a range "LO..HI step S", got "5 to 50"`},
		{"a number", "  - {name: s, kind: semaphore, n: {sweep: 5}}",
			`t.yaml:6: strategies[0].n: sweep: want a list [5, 10, 20] or a range "LO..HI step S", got 5`},
		{"empty list", "  - {name: s, kind: semaphore, n: {sweep: []}}",
			"t.yaml:6: strategies[0].n: sweep: empty list"},
		{"a value of the wrong type", "  - {name: s, kind: semaphore, n: {sweep: [5, ten]}}",
			`t.yaml:6: strategies[0].n.sweep[1]: want an integer, got "ten"`},
		{"a value listed twice", "  - {name: s, kind: semaphore, n: {sweep: [5, 5]}}",
			"t.yaml:6: strategies[0].n: sweep: 5 is listed twice"},
		{"an invalid value, judged as any value", "  - {name: s, kind: semaphore, n: {sweep: [5, -1]}}",
			"t.yaml:6: strategies[0].n: must not be negative, got -1"},
		{"a parameter of another kind", "  - {name: s, kind: semaphore, n: 2, decrease: {sweep: [0.5]}}",
			"t.yaml:6: strategies[0].decrease: not a parameter of kind semaphore"},
		{"too many rows", "  - {name: s, kind: aimd, initial: {sweep: \"1..100\"}, max: {sweep: \"100..200\"}}",
			"t.yaml:6: strategies[0].max: sweep: the row expands into more than 1000 rows"},
		{"a duration range without a step", "  - {name: d, kind: aimd-delay, cooldown: {sweep: \"1s..5s\"}}",
			"t.yaml:6: strategies[0].cooldown: sweep: a range of durations needs a step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(sweepScenario(tt.row+"\n")))
			if err == nil {
				t.Fatalf("Parse accepted %s", tt.row)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("%d problems reported, want 1:\n%v", n, err)
			}
		})
	}
}

// TestSweepOtherProblemsOnce checks that a problem of a swept row outside
// its sweep is reported once, not once per value.
func TestSweepOtherProblemsOnce(t *testing.T) {
	_, err := Parse("t.yaml", []byte(sweepScenario("  - {name: s, kind: semaphore, n: {sweep: [1, 2, 3]}, reqeue: true}\n")))
	if err == nil {
		t.Fatal("Parse accepted an unknown key")
	}
	if got := strings.Count(err.Error(), "unknown key"); got != 1 {
		t.Errorf("the unknown key is reported %d times, want once:\n%v", got, err)
	}
}

// FuzzParseRange checks that any sweep range either is refused with a
// message or gives ascending values within it, never more than
// MaxSweepRows, for integer, float and duration parameters.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"5..50 step 5", "0.5..0.9 step 0.1", "1s..2s step 500ms", "50..5", "1..1e9", "..", "1..2 step -1", "-3..3"} {
		f.Add(s)
	}
	types := []reflect.Type{reflect.TypeFor[int](), reflect.TypeFor[float64](), durationType, reflect.TypeFor[uint8]()}
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range types {
			vals, msg := parseRange(s, typ)
			if msg != "" {
				if vals != nil {
					t.Fatalf("parseRange(%q, %s): values with an error", s, typ)
				}
				continue
			}
			if len(vals) == 0 || len(vals) > MaxSweepRows {
				t.Fatalf("parseRange(%q, %s): %d values", s, typ, len(vals))
			}
			prev := math.Inf(-1)
			for _, v := range vals {
				_, x := showValue(v)
				if x < prev {
					t.Fatalf("parseRange(%q, %s): %v after %v", s, typ, x, prev)
				}
				prev = x
			}
		}
	})
}
