package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestOracleAssumptionsPrinted checks that the table and Markdown print
// the oracle's assumptions under the table, and print nothing of them for
// a report without an oracle; JSON carries them as oracle_assumptions.
func TestOracleAssumptionsPrinted(t *testing.T) {
	rep := Report{Scenario: "s", Target: "embedded mock", Results: []Result{{Name: "r", Kind: "semaphore", OracleSeconds: 5}},
		Oracle: []string{"every call takes its mean time", "limits follow the schedule"}}
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer, Report) error
		want  []string
	}{
		{"table", func(b *bytes.Buffer, r Report) error { return Table(b, r) },
			[]string{OracleNote + "\n"}},
		{"markdown", func(b *bytes.Buffer, r Report) error { return Markdown(b, r) },
			[]string{"**Oracle:** the best any client could do, assuming:\n\n- every call takes its mean time\n- limits follow the schedule\n"}},
		{"html", func(b *bytes.Buffer, r Report) error { return HTML(b, r) },
			[]string{"Oracle: the best any client could do, assuming:", "<li>limits follow the schedule</li>"}},
		{"json", func(b *bytes.Buffer, r Report) error { return JSON(b, r) },
			[]string{`"oracle_assumptions"`, `"limits follow the schedule"`}},
	} {
		var with, without bytes.Buffer
		if err := f.write(&with, rep); err != nil {
			t.Fatal(err)
		}
		bare := rep
		bare.Oracle = nil
		if err := f.write(&without, bare); err != nil {
			t.Fatal(err)
		}
		for _, w := range f.want {
			if !strings.Contains(with.String(), w) {
				t.Errorf("%s lacks %q:\n%s", f.name, w, with.String())
			}
		}
		if strings.Contains(without.String(), "limits follow") || strings.Contains(without.String(), OracleNote) || strings.Contains(without.String(), "**Oracle:**") || strings.Contains(without.String(), "oracle_assumptions") {
			t.Errorf("%s without assumptions still prints them:\n%s", f.name, without.String())
		}
	}
}
