package loadgen

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reportcard"
	"github.com/ratelab/ratelab/internal/reports"
)

// TestReportCardWiredEverywhere walks the report card's verdicts: each is
// a column of the terminal table (short header), of Markdown and HTML
// (long header) with its figure in the row, a field of the JSON report
// and an expect: key that reads the same figure. Every field of
// reportcard.Card must be a verdict or a supporting figure (JSON and an
// expect: key), so a new figure cannot be half-wired.
func TestReportCardWiredEverywhere(t *testing.T) {
	card := reportcard.Card{
		Retries: 131, RetriesAfterQuota: 103, RetriesAfterClientError: 104,
		RetryWaves: 105, SynchronizedRetries: 106, MaxRetryWave: 107,
		RefusedCalls: 50, RefusedCallAttempts: 117, RetryAmplification: 2.34,
		Capped: true, CapSlotSeconds: 10, IdleSlotSeconds: 6.13, IdleCapacity: 0.613,
		OverLimit: 417, PeakOverLimit: 23,
	}
	verdicts := []struct {
		short, long string // the table's and Markdown/HTML's headers
		cell        string // the row's figure as printed
		json        string // its field under report_card ("" for server_view's)
		serverJSON  string // its field on the result (ServerView is embedded)
		expect      []string
		want        []float64 // what each expect key reads
	}{
		{"early", "early retries", "111", "", "early_retries", []string{"early_retries"}, []float64{111}},
		{"re-quota", "retries after quota", "103", "retries_after_quota", "", []string{"retries_after_quota"}, []float64{103}},
		{"re-4xx", "retries after 4xx", "104", "retries_after_client_error", "", []string{"retries_after_client_error", "bad_retries"}, []float64{104, 207}},
		{"waves", "retry waves", "105", "retry_waves", "", []string{"retry_waves"}, []float64{105}},
		{"max wave", "largest wave", "107", "max_retry_wave", "", []string{"largest_retry_wave"}, []float64{107}},
		{"att/refused", "attempts per refused call", "2.34", "retry_amplification", "", []string{"retry_amplification"}, []float64{2.34}},
		{"idle cap", "idle capacity", "61.3%", "idle_capacity", "", []string{"idle_capacity"}, []float64{0.613}},
		{"over cap", "over the cap", "417 (+23)", "over_limit", "", []string{"over_limit"}, []float64{417}},
	}
	// Supporting figures: in JSON and expect:, shown through a verdict.
	supporting := map[string]string{
		"retries":               "retries",
		"synchronized_retries":  "synchronized_retries", // the retries in the waves column's waves
		"refused_calls":         "refused_calls",
		"refused_call_attempts": "refused_call_attempts",
		"peak_over_limit":       "peak_over_limit", // the over cap cell's (+23)
		"capped":                "",                // whether the cap figures are measured: they read "not measured" without
		"cap_slot_seconds":      "",                // idle capacity's denominator
		"idle_slot_seconds":     "",                // and numerator
	}
	res := reports.Result{Name: "row",
		ServerView: &reports.ServerView{EarlyRetries: 111, Card: &card}}
	rep := reports.Report{Scenario: "t", Results: []reports.Result{res}}
	render := func(r reports.Renderer) string {
		var b bytes.Buffer
		if err := r(&b, rep); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// Each format's card as header → cell.
	cols := map[string]map[string]string{}
	{
		out := render(reports.Table)
		_, after, _ := strings.Cut(out, reports.CardNote+"\n")
		lines := strings.Split(after, "\n")
		sep := regexp.MustCompile(`\s{2,}`)
		h, row := sep.Split(strings.TrimSpace(lines[0]), -1), sep.Split(strings.TrimSpace(lines[2]), -1)
		cols["table"] = zip(t, "table", h, row)
	}
	{
		out := render(reports.Markdown)
		_, after, _ := strings.Cut(out, "**Report card:**")
		lines := strings.Split(strings.TrimSpace(after), "\n")
		cells := func(l string) []string {
			f := strings.Split(strings.Trim(l, "| "), " | ")
			for i := range f {
				f[i] = strings.ReplaceAll(f[i], `\`, "")
			}
			return f
		}
		cols["markdown"] = zip(t, "markdown", cells(lines[2]), cells(lines[4]))
	}
	{
		out := render(reports.HTML)
		_, after, _ := strings.Cut(out, `<h3 id="report-card">`)
		tbl, _, _ := strings.Cut(after, "</table>")
		strip := regexp.MustCompile(`<[^>]+>`)
		var h, row []string
		for _, m := range regexp.MustCompile(`<th[^>]*>(.*?)</th>`).FindAllStringSubmatch(tbl, -1) {
			h = append(h, m[1])
		}
		for _, m := range regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tbl, -1) {
			row = append(row, strings.ReplaceAll(strip.ReplaceAllString(m[1], ""), "&#43;", "+"))
		}
		cols["html"] = zip(t, "html", h, row)
	}
	// The server view's fields are the result's own in JSON (embedded).
	var doc struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(render(reports.JSON)), &doc); err != nil || len(doc.Results) != 1 {
		t.Fatalf("JSON report: %v, %d results", err, len(doc.Results))
	}
	sv := doc.Results[0]
	var jcard map[string]json.RawMessage
	if err := json.Unmarshal(sv["report_card"], &jcard); err != nil {
		t.Fatalf("JSON report_card: %v", err)
	}
	for _, v := range verdicts {
		for format, header := range map[string]string{"table": v.short, "markdown": v.long, "html": v.long} {
			if got, ok := cols[format][header]; !ok || got != v.cell {
				t.Errorf("%s: column %q = %q (present %v), want %q", format, header, got, ok, v.cell)
			}
		}
		if v.json != "" {
			if _, ok := jcard[v.json]; !ok {
				t.Errorf("JSON report_card lacks %q", v.json)
			}
			delete(jcard, v.json)
		} else if _, ok := sv[v.serverJSON]; !ok {
			t.Errorf("JSON result lacks %q", v.serverJSON)
		}
		for i, key := range v.expect {
			checkMetric(t, key, &res, v.want[i])
		}
	}
	for field, key := range supporting {
		if _, ok := jcard[field]; !ok {
			t.Errorf("JSON report_card lacks supporting figure %q", field)
		}
		delete(jcard, field)
		if key != "" {
			checkMetric(t, key, &res, reflectField(card, field))
		}
	}
	for field := range jcard {
		t.Errorf("report_card field %q is neither a verdict nor a supporting figure of this test: wire it into every format and expect:, then list it", field)
	}
	if n := reflect.TypeOf(card).NumField(); n != len(verdicts)-1+len(supporting) {
		t.Errorf("reportcard.Card has %d fields, the test knows %d: list the new one", n, len(verdicts)-1+len(supporting))
	}
}

func zip(t *testing.T, format string, h, row []string) map[string]string {
	t.Helper()
	if len(h) != len(row) {
		t.Fatalf("%s card: %d headers %q, %d cells %q", format, len(h), h, len(row), row)
	}
	m := make(map[string]string, len(h))
	for i := range h {
		m[h[i]] = row[i]
	}
	return m
}

func checkMetric(t *testing.T, key string, r *reports.Result, want float64) {
	t.Helper()
	m, ok := Metrics[key]
	if !ok {
		t.Errorf("no expect: key %q", key)
		return
	}
	if m.By != ByServer {
		t.Errorf("expect: key %q is not a server metric", key)
	}
	if got := m.Value(r); got != want {
		t.Errorf("expect: key %q reads %g, want %g", key, got, want)
	}
}

// reflectField is the card's figure of JSON name field.
func reflectField(c reportcard.Card, field string) float64 {
	v, typ := reflect.ValueOf(c), reflect.TypeOf(c)
	for i := 0; i < typ.NumField(); i++ {
		if strings.Split(typ.Field(i).Tag.Get("json"), ",")[0] == field {
			f := v.Field(i)
			switch f.Kind() {
			case reflect.Int, reflect.Int64:
				return float64(f.Int())
			case reflect.Float64:
				return f.Float()
			}
		}
	}
	return -1
}
