package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/proc"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/mock"
)

// KindCommand is a row that runs the user's own program against a fresh
// embedded mock and measures it from the server side (CommandConfig).
const KindCommand = "command"

// CommandConfig is the parameters of a kind: command row:
//
//	strategies:
//	  - name: my batch script
//	    kind: command
//	    command: ["python3", "classify.py", "--concurrency", "20"]
//	    dir: ../examples/clients   # relative to the scenario file
//	    env: {MY_FLAG: "1"}
//	    timeout: 5m
//	    expect: {completed: 200, throttled: 0}
//
// The program runs with the variables CommandEnv lists, pointing the
// official SDKs at the mock. What the row reports comes from the mock's call
// accounting (mock.CallStats), so no help from the program is needed.
type CommandConfig struct {
	// Command is the program and its arguments, executed directly (never
	// through a shell). A program name without a slash is looked up in
	// PATH; a relative path is relative to Dir. Required.
	Command []string `yaml:"command"`
	// Dir is the working directory, relative to the scenario file. Default:
	// the scenario file's directory.
	Dir string `yaml:"dir"`
	// Env is added to the program's environment, after the variables
	// loadgen sets (so it may override them).
	Env map[string]string `yaml:"env"`
	// Timeout bounds the program's run. Default 10m. When it passes the
	// program's whole process group is stopped and the row fails.
	Timeout time.Duration `yaml:"timeout"`
}

// checkMeasurable refuses an expectation on a metric the row cannot
// measure (Scenario.unmeasurable).
func (s *Scenario) checkMeasurable(st *Row, bad func(key, format string, args ...any)) {
	for _, e := range st.Expect {
		if why := s.unmeasurable(st, e.Metric); why != "" {
			bad(fielderr.Join("expect", e.Key), "%s", why)
		}
	}
}

// commandDir returns the row's working directory.
func (s *Scenario) commandDir(c *CommandConfig) string {
	base := "."
	if s.File != "" {
		base = filepath.Dir(s.File)
	}
	if c.Dir == "" {
		return base
	}
	if filepath.IsAbs(c.Dir) {
		return c.Dir
	}
	return filepath.Join(base, c.Dir)
}

// checkCommandConfig checks what a command row's parameters say alone.
func checkCommandConfig(c *CommandConfig, p *problems) {
	switch {
	case len(c.Command) == 0:
		p.bad("command", `required: the program and its arguments, e.g. ["python3", "client.py"]`)
	case c.Command[0] == "":
		p.bad("command", "the program name is empty")
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.bad("env", "invalid variable name %q", k)
		}
	}
}

// checkCommand validates what a command row needs of its scenario (bad
// reports a problem at a key of the row) and adds its implicit
// expectations: unless the row says otherwise, the program must exit 0 and
// make at least one request.
func (s *Scenario) checkCommand(st *Row, bad func(key, format string, args ...any)) {
	c, ok := st.Config.(*CommandConfig)
	if st.Kind != KindCommand || !ok {
		return
	}
	for _, k := range []string{"max_retries", "requeue", "seed", "shared"} {
		if st.Set(k) {
			bad(k, "not a parameter of kind command: the program retries as it does on its own (its parameters: %s)", strings.Join(Kinds[KindCommand], ", "))
		}
	}
	if s.Target != nil {
		bad("kind", "a command row is measured by the embedded mock; remove target: (or run this row in a scenario without one)")
	}
	if len(c.Command) > 0 && c.Command[0] != "" {
		dir := s.commandDir(c)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			bad("dir", "%s is not a directory", dir)
		} else if _, err := proc.Resolve(c.Command[0], dir); err != nil {
			bad("command", "%v", err)
		}
	}
	if !st.Expect.has("exit_code") {
		st.Expect = append(st.Expect, Expectation{Key: "exit_code", Metric: "exit_code", Op: OpEq, V: 0})
	}
	if !st.Expect.has("attempts") {
		st.Expect = append(st.Expect, Expectation{Key: "attempts", Metric: "attempts", Op: OpGT, V: 0})
	}
}

// holds reports whether r meets every expectation of x on metric.
func (x Expect) holds(r *reports.Result, metric string) bool {
	for _, e := range x {
		if e.Metric == metric && !e.Check(r).OK {
			return false
		}
	}
	return true
}

// has reports whether x compares metric.
func (x Expect) has(metric string) bool {
	return slices.ContainsFunc(x, func(e Expectation) bool { return e.Metric == metric })
}

// CommandEnv returns the variables a command row's program runs with:
//
//	ANTHROPIC_BASE_URL   the mock's URL, without /v1 (the Anthropic SDKs add it)
//	OPENAI_BASE_URL      the mock's URL with /v1 (the OpenAI SDKs expect it)
//	ANTHROPIC_API_KEY, OPENAI_API_KEY   the scenario's test key
//	RATELAB_ITEMS_FILE   the items, one JSON object a line, in loadgen batch's
//	                     input format: id, prompt (or messages), system,
//	                     max_tokens, and metadata {"model", "provider"}
//	RATELAB_ITEMS        how many items
//	RATELAB_PROVIDER, RATELAB_MODEL, RATELAB_MAX_TOKENS   the scenario's request
func (s *Scenario) CommandEnv(baseURL, itemsFile string) []string {
	r := s.Request
	return []string{
		"ANTHROPIC_BASE_URL=" + strings.TrimSuffix(baseURL, "/"),
		"OPENAI_BASE_URL=" + ProviderBase("openai", baseURL),
		"ANTHROPIC_API_KEY=" + r.APIKey,
		"OPENAI_API_KEY=" + r.APIKey,
		"RATELAB_ITEMS_FILE=" + itemsFile,
		"RATELAB_ITEMS=" + strconv.Itoa(s.Items.Count()),
		"RATELAB_PROVIDER=" + r.Provider,
		"RATELAB_MODEL=" + r.Model,
		"RATELAB_MAX_TOKENS=" + strconv.Itoa(r.MaxTokens),
	}
}

// WriteItems writes the scenario's items to w in loadgen batch's input
// format (batch.Line), one line each: ids "0", "1", …; the model and
// provider of each item in its metadata.
func (s *Scenario) WriteItems(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	i := 0
	for _, g := range s.Groups() {
		meta, err := json.Marshal(struct {
			Model    string `json:"model"`
			Provider string `json:"provider"`
		}{g.Model, g.Provider})
		if err != nil {
			return err
		}
		filler := ""
		if g.PromptTokens > 0 {
			filler = g.promptText(0)
		}
		system := g.systemText()
		for range g.Count {
			prompt := filler
			if prompt == "" {
				prompt = g.promptText(i)
			}
			in := batch.Line{ID: strconv.Itoa(i), Prompt: prompt, System: system, MaxTokens: g.MaxTokens, Metadata: meta}
			if err := enc.Encode(&in); err != nil {
				return err
			}
			i++
		}
	}
	return bw.Flush()
}

// runCommand runs a command row: a fresh embedded mock on a loopback port,
// the program pointed at it, and the row built from the mock's account.
func runCommand(ctx context.Context, s *Scenario, st *Row, opt Options) (reports.Result, error) {
	c, ok := st.Config.(*CommandConfig)
	if !ok {
		return reports.Result{Name: st.Name, Kind: st.Kind}, fmt.Errorf("loadgen: row %q is not a command row", st.Name)
	}
	dir := s.commandDir(c)
	res := reports.Result{Name: st.Name, Kind: st.Kind, Params: commandParams(c)}
	res.Items = s.Items.Count()
	cmd := &reports.Command{Argv: c.Command, Dir: dir}
	res.Command = cmd

	// The same embedded mock as every other row's, on a real socket
	// whatever opt.Listen says: the program is another process.
	tg, err := startTarget(s, Options{Listen: ListenTCP}, 1, nil)
	if err != nil {
		return res, err
	}
	defer tg.close()

	// The items file and the program's output go to --out when given,
	// else to a temporary directory removed afterwards.
	outDir := opt.CommandOut
	if outDir == "" {
		tmp, err := os.MkdirTemp("", "ratelab-command-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(tmp)
		outDir = tmp
	} else if err := os.MkdirAll(outDir, 0o755); err != nil {
		return res, err
	}
	slug := fileSlug(st.Name)
	itemsPath, err := filepath.Abs(filepath.Join(outDir, slug+".items.jsonl"))
	if err != nil {
		return res, err
	}
	if err := writeFile(itemsPath, s.WriteItems); err != nil {
		return res, fmt.Errorf("items file: %w", err)
	}
	var outs []*os.File
	open := func(ext string) (*os.File, error) {
		f, err := os.Create(filepath.Join(outDir, slug+ext))
		if err == nil {
			outs = append(outs, f)
		}
		return f, err
	}
	defer func() {
		for _, f := range outs {
			f.Close()
		}
	}()
	stdout, err := open(".stdout")
	if err != nil {
		return res, err
	}
	stderr, err := open(".stderr")
	if err != nil {
		return res, err
	}
	if opt.CommandOut != "" {
		cmd.Stdout, cmd.Stderr = stdout.Name(), stderr.Name()
	}

	env := s.CommandEnv(tg.baseURL, itemsPath)
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		env = append(env, k+"="+c.Env[k])
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = proc.DefaultTimeout
	}
	var prog *progress
	if opt.Progress != nil {
		prog = startServerProgress(opt.Progress, opt.position.label(st.Name), res.Items, tg.srv)
	}
	pr, err := proc.Run(ctx, proc.Spec{Argv: c.Command, Dir: dir, Env: env, Timeout: timeout, Stdout: stdout, Stderr: stderr})
	if prog != nil {
		prog.stop()
	}
	if err != nil {
		return res, fmt.Errorf("command: %w", err)
	}
	fillFromServer(&res, tg.srv, s.OracleSeconds())
	cmd.Status = pr.Describe(timeout)
	cmd.ExitCode = pr.ExitCode
	cmd.TimedOut = pr.TimedOut
	cmd.Seconds = pr.End.Sub(pr.Start).Seconds()
	if res.Attempts == 0 {
		cmd.Status += "; made no request"
	}
	// The last lines are kept, and shown, when the program did not end as
	// the row expects (by default: exit 0 after making a request).
	if !st.Expect.holds(&res, "exit_code") || !st.Expect.holds(&res, "attempts") || pr.TimedOut || pr.Interrupted {
		cmd.StdoutTail, cmd.StderrTail = pr.StdoutTail, pr.StderrTail
		if opt.CommandLog != nil {
			logCommandFailure(opt.CommandLog, st.Name, cmd)
		}
	}
	if pr.Interrupted {
		res.Incomplete = true
		return res, ctx.Err()
	}
	return res, nil
}

// fillFromServer builds a row from the mock's account of the traffic.
func fillFromServer(r *reports.Result, srv *mock.Server, oracle float64) {
	st := srv.Stats()
	c := st.Calls
	r.Completed = int(min(c.Completed, int64(r.Items)))
	r.Failed = r.Items - r.Completed
	r.Attempts, r.Throttled, r.Overloaded = c.Attempts, c.Throttled, c.Overloaded
	r.Quota = c.QuotaExceeded // a spent quota's 429s, not in Throttled
	r.ServerErrors, r.Errors = c.ServerErrors, c.Errors
	r.AttemptsPerCall = c.AttemptsPerCall
	r.ThrottledByAttempt = c.ThrottledByAttempt
	r.MaxAttempts = c.MaxAttempts
	r.InputTokens, r.OutputTokens = st.InputTokens, st.OutputTokens
	r.WallSeconds = c.Seconds
	r.SetOracle(oracle)
	r.Attempt = measure.Percentiles(c.Latency)
	r.ServerView = serverView(c)
	tl := &measure.Timeline{ResolutionSeconds: c.Timeline.ResolutionSeconds, Points: make([]measure.Point, len(c.Timeline.Points))}
	for i, p := range c.Timeline.Points {
		tl.Points[i] = measure.Point{T: p.T, InFlight: p.InFlight, CompletionsRate: p.CompletionsRate, ThrottlesRate: p.ThrottlesRate}
	}
	r.Timeline = tl
}

// serverView is the figures only the server knows, from the mock's account:
// the same for built-in and command rows.
func serverView(c mock.CallStats) *reports.ServerView {
	card := c.Card // one type, internal/reportcard's
	return &reports.ServerView{EarlyRetries: c.EarlyRetries, PeakConcurrency: c.PeakConcurrency, ThrottledBy: maps.Clone(c.ThrottledBy), Card: &card}
}

// logCommandFailure writes how a row's program failed, with its last lines.
func logCommandFailure(w io.Writer, name string, c *reports.Command) {
	if argv := strings.Join(c.Argv, " "); !strings.HasPrefix(argv, strings.TrimSuffix(name, "...")) {
		name += ": " + argv
	}
	fmt.Fprintf(w, "%s: %s\n", name, c.Status)
	for _, t := range []struct {
		name  string
		lines []string
	}{{"stdout", c.StdoutTail}, {"stderr", c.StderrTail}} {
		if len(t.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "  last lines of %s:\n", t.name)
		for _, l := range t.lines {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

func commandParams(c *CommandConfig) map[string]any {
	p := map[string]any{"command": strings.Join(c.Command, " ")}
	if c.Dir != "" {
		p["dir"] = c.Dir
	}
	if c.Timeout > 0 {
		p["timeout"] = c.Timeout.String()
	}
	return p
}

// fileSlug turns a row's name into a file name: letters, digits, '-', '.'
// and '_' kept, the rest '_'.
func fileSlug(name string) string {
	b := []byte(name)
	for i, ch := range b {
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '.' || ch == '_'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "command"
	}
	return string(b)
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = fill(f)
	return errors.Join(err, f.Close())
}

// ExecScenario returns the scenario loadgen exec runs: base (a --config
// file read with LoadBatchConfig, or nil for the defaults: 200 items against
// mock.DefaultConfig) with one row, the program argv run in dir. The row
// takes its name, env, timeout and expect from base's first command row
// when it has one. items, when positive, replaces the item count; server,
// when set, is applied to the embedded mock's configuration (the mock flags).
// Its error names what is wrong, as Parse's do.
func ExecScenario(base *Scenario, argv []string, dir string, items int, server func(*mock.Config)) (*Scenario, error) {
	if base == nil {
		var err error
		if base, err = parse(&Scenario{File: "loadgen exec", batch: true}, []byte("items: 200\n")); err != nil {
			return nil, err
		}
	}
	s := *base
	s.batch = false
	name := strings.Join(argv, " ")
	if len(name) > 40 {
		name = name[:37] + "..."
	}
	st := Row{Name: name, Kind: KindCommand}
	c := CommandConfig{}
	for _, r := range base.Strategies {
		if rc, ok := r.Config.(*CommandConfig); ok && r.Kind == KindCommand {
			st, c = r, *rc
			st.Expect = slices.Clone(r.Expect)
			break
		}
	}
	c.Command, c.Dir = argv, dir
	st.Config = &c
	s.Strategies = []Row{st}
	if items > 0 {
		if len(s.Items.Groups) > 1 {
			return nil, Errors{{File: s.File, Line: s.line("items"), Path: "items", Message: "--items replaces one item group's count; this file has several"}}
		}
		g := ItemGroup{}
		if len(s.Items.Groups) == 1 {
			g = s.Items.Groups[0]
		}
		g.Count = items
		s.Items.Groups = []ItemGroup{g}
	}
	if server != nil {
		server(&s.Server)
	}
	if s.Items.Count() == 0 {
		s.Items.Groups = []ItemGroup{{Count: 200}}
	}
	s.applyDefaults()
	d := strict.NewDecoder(s.File)
	s.validate(d)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}
