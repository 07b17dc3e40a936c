package batch

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// API runs a batch through a provider's batch API (loadgen batch --via
// batch-api; docs/batch-api.md) instead of one call per item: it splits the
// items still to make into provider batches within the API's limits,
// submits them, polls them with backoff, and appends their results to the
// output in Batch's format, exactly once per id. What it has created is in
// a state file beside the output, written before a batch counts as
// submitted, so a run killed at any moment resumes without creating a
// batch twice (see Run).
type API struct {
	// Input, Output, Model, MaxTokens, SystemCache, RetryFailed and
	// SkipInvalid are Batch's.
	Input, Output string
	Model         string
	MaxTokens     int
	SystemCache   string
	RetryFailed   bool
	SkipInvalid   bool
	// Provider is the wire format of the requests: "anthropic" uses the
	// Message Batches API, "openai" and "openai-responses" the Files and
	// Batch APIs.
	Provider provider.Provider
	// BaseURL is the provider's endpoint as provider.Client takes it
	// (OpenAI's with /v1); empty is its production URL. APIKey its key.
	BaseURL, APIKey string
	// HTTP is the client; nil is http.DefaultClient.
	HTTP *http.Client
	// Clock is the time polls and backoffs wait on; nil is clock.Real.
	Clock clock.Clock
	// State is the state file; empty is Output + ".batches.json".
	State string
	// Resubmit lists the outcomes whose items are submitted again in a new
	// batch rather than recorded as errors: "expired", "errored" (server
	// errors; an invalid request is never resubmitted), "canceled".
	Resubmit []string
	// MaxRounds bounds the submissions of one item (0 means 3): an item
	// still expiring after them is recorded as an error.
	MaxRounds int
	// BatchSize caps the requests of one provider batch; 0 is the API's
	// documented maximum (100,000 Anthropic, 50,000 OpenAI). BatchBytes
	// caps its bytes likewise (256 MB, 200 MB).
	BatchSize  int
	BatchBytes int
	// PollMin and PollMax bound the polling backoff (0: 10 s and 5 min):
	// the first poll of a batch waits PollMin, each one after twice the
	// last, up to PollMax.
	PollMin, PollMax time.Duration
	// OnStart is Batch.OnStart; OnEvent, when set, is told each batch
	// created, adopted, ended or refused, one line each.
	OnStart func(Summary)
	OnEvent func(string)

	// afterCreate, in tests, runs right after a batch is created and
	// before it is recorded: an error stops Run there, as a kill would.
	afterCreate func() error
}

// APISummary is how a run through a batch API went: Batch's counts, and
// the provider batches.
type APISummary struct {
	Summary
	// Created counts the provider batches this run created, Adopted those
	// an earlier run had created and this one resumed (found through the
	// state file, or by listing the batches in the crash window between a
	// creation and its record).
	Created int `json:"batches_created"`
	Adopted int `json:"batches_adopted"`
	// Refused counts the creations the API refused for its queue limits
	// (429, or OpenAI's token_limit_exceeded) and that were made again
	// after a wait.
	Refused int `json:"batches_refused"`
	// Resubmitted counts the items submitted again (APIResubmit).
	Resubmitted int `json:"resubmitted"`
	// Outcomes counts the requests' outcomes: succeeded, errored,
	// expired, canceled.
	Outcomes map[string]int `json:"outcomes"`
}

// apiState is the state file: the run's token and every batch created.
type apiState struct {
	Version  int        `json:"version"`
	Provider string     `json:"provider"`
	Token    string     `json:"token"`
	Seq      int        `json:"seq"`
	Chunks   []apiChunk `json:"chunks"`
}

// apiChunk is one provider batch: its items (input lines), when its
// creation was decided, and its id once created.
type apiChunk struct {
	Key      string    `json:"key"` // the custom_id prefix and OpenAI metadata marker
	Lines    []int     `json:"lines"`
	Intent   time.Time `json:"intent_at"`
	FileID   string    `json:"file_id,omitempty"`
	BatchID  string    `json:"batch_id,omitempty"`
	Done     bool      `json:"done,omitempty"`
	Attempts int       `json:"round"`
}

// metaKey is the metadata key an OpenAI batch carries its chunk's key in.
const metaKey = "ratelab_batch"

type apiRun struct {
	a       *API
	b       *Batch
	clk     clock.Clock
	hc      *http.Client
	base    string
	openai  bool
	state   apiState
	path    string
	lines   map[int]*Line // the items still to make, by input line
	rounds  map[int]int   // submissions of each line so far
	ids     map[idKey]idState
	out     *os.File
	jsonl   *engine.JSONL
	sum     *APISummary
	pending []int // lines to submit
}

// Run runs the batch. On a resume it reads the state file: a batch whose
// id is recorded is polled again, never created twice; a batch whose
// creation was decided but not recorded (the process was killed between
// the creation and its record) is looked for in the API's list: OpenAI's
// by the metadata marker it was created with, Anthropic's (whose batches
// carry no metadata) by its creation time and size, and confirmed by its
// results' custom_ids, which carry the chunk's key. Only when no such
// batch exists are its items submitted again.
func (a *API) Run(ctx context.Context) (APISummary, error) {
	sum := APISummary{Outcomes: map[string]int{}}
	if a.Provider == nil || a.Input == "" || a.Output == "" {
		return sum, errors.New("batch: API.Provider, Input and Output are required")
	}
	r := &apiRun{a: a, clk: clock.Or(a.Clock), hc: a.HTTP, sum: &sum, rounds: map[int]int{}}
	if r.hc == nil {
		r.hc = http.DefaultClient
	}
	switch a.Provider.Name() {
	case "anthropic":
	case "openai", "openai-responses":
		r.openai = true
	default:
		return sum, fmt.Errorf("batch: the %s provider has no batch API", a.Provider.Name())
	}
	r.base = strings.TrimRight(cmp.Or(a.BaseURL, a.Provider.DefaultBaseURL()), "/")
	for _, o := range a.Resubmit {
		if !slices.Contains([]string{"expired", "errored", "canceled"}, o) {
			return sum, fmt.Errorf("batch: resubmit: want expired, errored or canceled, got %q", o)
		}
	}
	r.b = &Batch{Input: a.Input, Output: a.Output, Model: a.Model, MaxTokens: a.MaxTokens, SystemCache: a.SystemCache, RetryFailed: a.RetryFailed, SkipInvalid: a.SkipInvalid,
		Provider: a.Provider.Name()}
	// A line may name its model, but not another provider: every request
	// goes into this provider's batches.
	r.b.rt = newRouter(r.b)
	r.b.rt.refuse = fmt.Sprintf("a batch-API run sends every line to %s's batch API; "+
		"give the lines of other providers a batch of their own (or run them without the batch API, which routes each line to its provider)", a.Provider.Name())
	if r.openai {
		r.b.rt.oneModel = a.Model
	}
	var err error
	if r.ids, err = r.b.validate(ctx, &sum.Summary); err != nil {
		return sum, err
	}
	if r.out, err = r.b.openOutput(r.ids, &sum.Summary); err != nil {
		return sum, err
	}
	defer r.out.Close()
	r.jsonl = engine.NewJSONL(r.out)
	r.path = cmp.Or(a.State, a.Output+".batches.json")
	if err := r.loadState(); err != nil {
		return sum, err
	}
	r.lines = make(map[int]*Line)
	if err := r.b.scan(func(line int, in *Line, _ *InputError) bool {
		if in != nil {
			if st := r.ids[keyOf(in.ID)]; int(st.line) == line && st.done == notDone {
				r.lines[line] = in
			}
		}
		return true
	}); err != nil {
		return sum, err
	}
	sum.Remaining = len(r.lines)
	sum.FailedByType = map[string]int{}
	inFlight := map[int]bool{}
	for _, c := range r.state.Chunks {
		if c.Done {
			continue
		}
		for _, l := range c.Lines {
			inFlight[l] = true
			r.rounds[l] = max(r.rounds[l], c.Attempts)
		}
	}
	for _, l := range slices.Sorted(maps.Keys(r.lines)) {
		if !inFlight[l] {
			r.pending = append(r.pending, l)
		}
	}
	if a.OnStart != nil {
		a.OnStart(sum.Summary)
	}
	started := r.clk.Now()
	err = r.loop(ctx)
	sum.Run.WallSeconds = r.clk.Now().Sub(started).Seconds()
	sum.Run.Completed, sum.Run.Failed = sum.Completed, sum.Failed
	if cerr := r.out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", a.Output, cerr)
	}
	return sum, err
}

func (r *apiRun) event(format string, args ...any) {
	if r.a.OnEvent != nil {
		r.a.OnEvent(fmt.Sprintf(format, args...))
	}
}

// loop submits, polls and collects until every item has a result.
func (r *apiRun) loop(ctx context.Context) error {
	if err := r.reconcile(ctx); err != nil {
		return err
	}
	pollMin := r.a.PollMin
	if pollMin <= 0 {
		pollMin = 10 * time.Second
	}
	pollMax := max(r.a.PollMax, pollMin)
	if r.a.PollMax <= 0 {
		pollMax = max(5*time.Minute, pollMin)
	}
	wait := pollMin
	for {
		refused, err := r.submit(ctx)
		if err != nil {
			return err
		}
		progressed := false
		active := 0
		for i := range r.state.Chunks {
			c := &r.state.Chunks[i]
			if c.Done || c.BatchID == "" {
				continue
			}
			active++
			ended, err := r.collect(ctx, c)
			if err != nil {
				return err
			}
			if ended {
				progressed = true
				active--
			}
		}
		if active == 0 && len(r.pending) == 0 {
			return nil
		}
		if progressed && !refused {
			wait = pollMin
		}
		if err := r.clk.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, pollMax)
	}
}

// reconcile resolves the chunks an earlier run decided to create but did
// not record: adopted when the API lists their batch, else their items go
// back to the pending ones.
func (r *apiRun) reconcile(ctx context.Context) error {
	var orphans []*apiChunk
	for i := range r.state.Chunks {
		if c := &r.state.Chunks[i]; !c.Done && c.BatchID == "" {
			orphans = append(orphans, c)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	listed, err := r.list(ctx, orphans[0].Intent.Add(-5*time.Minute))
	if err != nil {
		return err
	}
	claimed := map[string]bool{}
	for _, c := range r.state.Chunks {
		if c.BatchID != "" {
			claimed[c.BatchID] = true
		}
	}
	for _, c := range orphans {
		found := ""
		for _, b := range listed {
			if claimed[b.id] {
				continue
			}
			if r.openai && b.marker == c.Key || !r.openai && b.total == len(c.Lines) && !b.created.Before(c.Intent.Add(-time.Minute)) {
				found = b.id
				break
			}
		}
		if found != "" {
			claimed[found] = true
			c.BatchID = found
			r.sum.Adopted++
			r.event("adopted batch %s (%d requests), created before the last run stopped and not yet recorded", found, len(c.Lines))
			continue
		}
		c.Done = true // never created: its items are made again
		r.pending = append(r.pending, c.Lines...)
	}
	slices.Sort(r.pending)
	return r.saveState()
}

// listed is one batch of the API's list.
type listed struct {
	id      string
	created time.Time
	total   int
	marker  string
}

// list lists the batches created since since, newest first.
func (r *apiRun) list(ctx context.Context, since time.Time) ([]listed, error) {
	var out []listed
	after := ""
	for page := 0; page < 100; page++ {
		u := r.base + "/v1/messages/batches?limit=100"
		cursor := "&after_id="
		if r.openai {
			u, cursor = r.base+"/batches?limit=100", "&after="
		}
		if after != "" {
			u += cursor + after
		}
		var resp struct {
			Data []struct {
				ID            string            `json:"id"`
				CreatedAt     json.RawMessage   `json:"created_at"`
				RequestCounts map[string]int    `json:"request_counts"`
				Metadata      map[string]string `json:"metadata"`
			} `json:"data"`
			HasMore bool   `json:"has_more"`
			LastID  string `json:"last_id"`
		}
		if err := r.call(ctx, http.MethodGet, u, nil, "", &resp); err != nil {
			return nil, fmt.Errorf("listing batches to resume: %w", err)
		}
		old := false
		for _, d := range resp.Data {
			l := listed{id: d.ID, marker: d.Metadata[metaKey]}
			var ts string
			var unix int64
			if json.Unmarshal(d.CreatedAt, &unix) == nil {
				l.created = time.Unix(unix, 0)
			} else if json.Unmarshal(d.CreatedAt, &ts) == nil {
				l.created, _ = time.Parse(time.RFC3339Nano, ts)
			}
			if r.openai {
				l.total = d.RequestCounts["total"]
			} else {
				for _, n := range d.RequestCounts {
					l.total += n
				}
			}
			if l.created.Before(since) {
				old = true
				break
			}
			out = append(out, l)
		}
		if old || !resp.HasMore || resp.LastID == "" {
			break
		}
		after = resp.LastID
	}
	return out, nil
}

// limits are the API's per-batch limits.
func (r *apiRun) limits() (n, size int) {
	n, size = 100_000, 256_000_000
	if r.openai {
		n, size = 50_000, 200<<20
	}
	if r.a.BatchSize > 0 {
		n = min(n, r.a.BatchSize)
	}
	if r.a.BatchBytes > 0 {
		size = min(size, r.a.BatchBytes)
	}
	return n, size
}

// submit creates batches for the pending items; refused reports that the
// API refused one for its queue limits (it is tried again after the next
// wait).
func (r *apiRun) submit(ctx context.Context) (refused bool, err error) {
	maxN, maxBytes := r.limits()
	for len(r.pending) > 0 {
		r.state.Seq++
		key := fmt.Sprintf("r%s_%d", r.state.Token, r.state.Seq)
		var body bytes.Buffer
		var lines []int
		for _, l := range r.pending {
			entry, err := r.entry(ctx, key, l)
			if err != nil {
				return false, err
			}
			if len(lines) > 0 && (len(lines) == maxN || body.Len()+len(entry)+16 > maxBytes) {
				break
			}
			if len(lines) > 0 && !r.openai {
				body.WriteByte(',')
			}
			body.Write(entry)
			lines = append(lines, l)
		}
		round := 0
		for _, l := range lines {
			round = max(round, r.rounds[l]+1)
		}
		c := apiChunk{Key: key, Lines: lines, Intent: r.clk.Now(), Attempts: round}
		// Recorded before the creation: a kill from here on leaves the
		// intent, which the next run resolves (reconcile).
		r.state.Chunks = append(r.state.Chunks, c)
		if err := r.saveState(); err != nil {
			return false, err
		}
		cp := &r.state.Chunks[len(r.state.Chunks)-1]
		id, status, err := r.create(ctx, cp, body.Bytes())
		if status == http.StatusTooManyRequests || errors.Is(err, errEnqueued) {
			r.sum.Refused++
			r.event("batch of %d requests refused for the queue limit (%v); trying again later", len(lines), err)
			// Not created: the items stay pending.
			r.state.Chunks = r.state.Chunks[:len(r.state.Chunks)-1]
			return true, r.saveState()
		}
		if err != nil {
			return false, err
		}
		if r.a.afterCreate != nil {
			if err := r.a.afterCreate(); err != nil {
				return false, err
			}
		}
		cp.BatchID = id
		if err := r.saveState(); err != nil {
			return false, err
		}
		r.sum.Created++
		for _, l := range lines {
			r.rounds[l] = round
		}
		if round > 1 {
			r.sum.Resubmitted += len(lines)
		}
		r.event("created batch %s: %d requests", id, len(lines))
		r.pending = r.pending[len(lines):]
	}
	return false, nil
}

var errEnqueued = errors.New("enqueued token limit reached")

// entry is line l's request in the batch's format: the body the
// synchronous endpoint takes, from the provider's own encoder.
func (r *apiRun) entry(ctx context.Context, key string, l int) ([]byte, error) {
	it := r.b.item(l, r.lines[l])
	it.Request.IdempotencyKey = ""
	req, err := r.a.Provider.NewRequest(ctx, "http://encode.invalid", "", it.Request, 0)
	if err != nil {
		return nil, fmt.Errorf("encoding line %d: %w", l, err)
	}
	params, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	cid := key + "_" + strconv.Itoa(l)
	if r.openai {
		endpoint := "/v1/chat/completions"
		if r.a.Provider.Name() == "openai-responses" {
			endpoint = "/v1/responses"
		}
		e, _ := json.Marshal(map[string]any{"custom_id": cid, "method": "POST", "url": endpoint, "body": json.RawMessage(params)})
		return append(e, '\n'), nil
	}
	return json.Marshal(map[string]any{"custom_id": cid, "params": json.RawMessage(params)})
}

// create creates chunk c's batch from its encoded requests.
func (r *apiRun) create(ctx context.Context, c *apiChunk, reqs []byte) (id string, status int, err error) {
	if !r.openai {
		body := append(append([]byte(`{"requests":[`), reqs...), "]}"...)
		var resp struct {
			ID string `json:"id"`
		}
		err := r.call(ctx, http.MethodPost, r.base+"/v1/messages/batches", body, "application/json", &resp)
		var he *httpError
		if errors.As(err, &he) {
			return "", he.status, err
		}
		return resp.ID, 0, err
	}
	if c.FileID == "" {
		var mp bytes.Buffer
		boundary := "ratelab-" + c.Key
		fmt.Fprintf(&mp, "--%s\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n", boundary)
		fmt.Fprintf(&mp, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n", boundary, c.Key)
		mp.Write(reqs)
		fmt.Fprintf(&mp, "\r\n--%s--\r\n", boundary)
		var f struct {
			ID string `json:"id"`
		}
		if err := r.call(ctx, http.MethodPost, r.base+"/files", mp.Bytes(), "multipart/form-data; boundary="+boundary, &f); err != nil {
			return "", 0, fmt.Errorf("uploading the input file: %w", err)
		}
		c.FileID = f.ID
		if err := r.saveState(); err != nil {
			return "", 0, err
		}
	}
	endpoint := "/v1/chat/completions"
	if r.a.Provider.Name() == "openai-responses" {
		endpoint = "/v1/responses"
	}
	body, _ := json.Marshal(map[string]any{"input_file_id": c.FileID, "endpoint": endpoint, "completion_window": "24h", "metadata": map[string]string{metaKey: c.Key}})
	var resp struct {
		ID string `json:"id"`
	}
	err = r.call(ctx, http.MethodPost, r.base+"/batches", body, "application/json", &resp)
	var he *httpError
	if errors.As(err, &he) {
		return "", he.status, err
	}
	return resp.ID, 0, err
}

// collect polls chunk c's batch and, once it has ended, appends its
// results; true once c is done.
func (r *apiRun) collect(ctx context.Context, c *apiChunk) (bool, error) {
	results, ended, err := r.results(ctx, c)
	var he *httpError
	if errors.As(err, &he) && he.status == http.StatusNotFound {
		// The API no longer knows the batch (deleted, or a mock that was
		// restarted): its items are submitted again.
		r.event("batch %s is gone (404); submitting its %d requests again", c.BatchID, len(c.Lines))
		c.Done = true
		r.pending = append(r.pending, c.Lines...)
		slices.Sort(r.pending)
		return true, r.saveState()
	}
	if err != nil || !ended {
		return false, err
	}
	if results == nil { // OpenAI's token_limit_exceeded: submit again
		r.sum.Refused++
		r.event("batch %s failed: enqueued token limit reached; its %d requests are submitted again later", c.BatchID, len(c.Lines))
		c.Done = true
		r.pending = append(r.pending, c.Lines...)
		slices.Sort(r.pending)
		return true, r.saveState()
	}
	prefix := c.Key + "_"
	ours := 0
	for cid := range results {
		if strings.HasPrefix(cid, prefix) {
			ours++
		}
	}
	if ours == 0 && len(results) > 0 {
		// An adopted batch that was not ours after all (Anthropic's
		// lookup is by time and size): its items are submitted again.
		r.event("batch %s is not this run's (its custom_ids do not carry %s); submitting its items again", c.BatchID, c.Key)
		c.Done = true
		r.pending = append(r.pending, c.Lines...)
		slices.Sort(r.pending)
		return true, r.saveState()
	}
	resubmit := map[string]bool{}
	for _, o := range r.a.Resubmit {
		resubmit[o] = true
	}
	maxRounds := r.a.MaxRounds
	if maxRounds <= 0 {
		maxRounds = 3
	}
	var again []int
	for _, l := range c.Lines {
		in := r.lines[l]
		if in == nil {
			continue // done already
		}
		st := r.ids[keyOf(in.ID)]
		if st.done != notDone {
			continue
		}
		res, ok := results[prefix+strconv.Itoa(l)]
		if !ok {
			res = apiResult{outcome: "expired", err: &engine.ResultError{Type: "missing", Message: "the batch's results have no line for this request"}}
		}
		r.sum.Outcomes[res.outcome]++
		if res.err != nil && resubmit[res.outcome] && !res.permanent && c.Attempts < maxRounds {
			again = append(again, l)
			continue
		}
		out := engine.Result{Index: l - 1, ID: in.ID, Metadata: in.Metadata, Attempts: c.Attempts, Err: res.err}
		if res.err == nil {
			out.Text, out.StopReason, out.Usage = res.resp.Text, res.resp.StopReason, res.resp.Usage
			r.sum.Run.InputTokens += int64(res.resp.Usage.InputTokens)
			r.sum.Run.OutputTokens += int64(res.resp.Usage.OutputTokens)
		}
		if err := r.jsonl.Put(out); err != nil {
			return false, fmt.Errorf("%s: %w", r.a.Output, err)
		}
		r.sum.Remaining--
		if res.err == nil {
			r.sum.Completed++
			r.ids[keyOf(in.ID)] = markDone(st, doneOK)
		} else {
			r.sum.Failed++
			r.sum.FailedByType[res.err.Type]++
			r.ids[keyOf(in.ID)] = markDone(st, doneFailed)
		}
		delete(r.lines, l)
	}
	// The results are in the output before the chunk counts as done: a
	// kill in between downloads them again, and the ids already there are
	// skipped.
	if err := r.out.Sync(); err != nil {
		return false, fmt.Errorf("%s: %w", r.a.Output, err)
	}
	c.Done = true
	r.pending = append(r.pending, again...)
	slices.Sort(r.pending)
	r.event("batch %s ended: %d results recorded, %d to submit again", c.BatchID, len(c.Lines)-len(again), len(again))
	return true, r.saveState()
}

// apiResult is one request's result.
type apiResult struct {
	outcome   string
	resp      provider.Response
	err       *engine.ResultError
	permanent bool // an invalid request: never resubmitted
}

// results reads chunk c's batch; ended false while it runs. A nil map of
// an ended batch is OpenAI's enqueued-token failure.
func (r *apiRun) results(ctx context.Context, c *apiChunk) (map[string]apiResult, bool, error) {
	if !r.openai {
		var b struct {
			ProcessingStatus string `json:"processing_status"`
		}
		if err := r.call(ctx, http.MethodGet, r.base+"/v1/messages/batches/"+c.BatchID, nil, "", &b); err != nil {
			return nil, false, fmt.Errorf("polling batch %s: %w", c.BatchID, err)
		}
		if b.ProcessingStatus != "ended" {
			return nil, false, nil
		}
		out := map[string]apiResult{}
		err := r.stream(ctx, r.base+"/v1/messages/batches/"+c.BatchID+"/results", func(line []byte) error {
			var l struct {
				CustomID string `json:"custom_id"`
				Result   struct {
					Type    string          `json:"type"`
					Message json.RawMessage `json:"message"`
					Error   struct {
						Error struct {
							Type    string `json:"type"`
							Message string `json:"message"`
						} `json:"error"`
					} `json:"error"`
				} `json:"result"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				return fmt.Errorf("batch %s results: %w", c.BatchID, err)
			}
			res := apiResult{outcome: l.Result.Type}
			switch l.Result.Type {
			case "succeeded":
				res = r.decode(l.Result.Message)
			case "errored":
				e := l.Result.Error.Error
				status := 500
				if e.Type == "invalid_request_error" {
					status, res.permanent = 400, true
				}
				res.err = &engine.ResultError{Status: status, Type: e.Type, Message: e.Message}
			default:
				res.err = &engine.ResultError{Type: l.Result.Type, Message: "the batch " + l.Result.Type + " before this request was processed"}
			}
			out[l.CustomID] = res
			return nil
		})
		return out, true, err
	}
	var b struct {
		Status       string `json:"status"`
		OutputFileID string `json:"output_file_id"`
		ErrorFileID  string `json:"error_file_id"`
		Errors       *struct {
			Data []struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"data"`
		} `json:"errors"`
	}
	if err := r.call(ctx, http.MethodGet, r.base+"/batches/"+c.BatchID, nil, "", &b); err != nil {
		return nil, false, fmt.Errorf("polling batch %s: %w", c.BatchID, err)
	}
	switch b.Status {
	case "completed", "expired", "cancelled":
	case "failed":
		if b.Errors != nil && len(b.Errors.Data) > 0 && b.Errors.Data[0].Code == "token_limit_exceeded" {
			return nil, true, nil
		}
		msg := "no errors given"
		if b.Errors != nil && len(b.Errors.Data) > 0 {
			msg = b.Errors.Data[0].Code + ": " + b.Errors.Data[0].Message
		}
		return nil, false, fmt.Errorf("batch %s failed its validation: %s", c.BatchID, msg)
	default:
		return nil, false, nil
	}
	out := map[string]apiResult{}
	for _, f := range []string{b.OutputFileID, b.ErrorFileID} {
		if f == "" {
			continue
		}
		err := r.stream(ctx, r.base+"/files/"+f+"/content", func(line []byte) error {
			var l struct {
				CustomID string `json:"custom_id"`
				Response *struct {
					StatusCode int             `json:"status_code"`
					Body       json.RawMessage `json:"body"`
				} `json:"response"`
				Error *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				return fmt.Errorf("batch %s file %s: %w", c.BatchID, f, err)
			}
			var res apiResult
			switch {
			case l.Response != nil && l.Response.StatusCode == 200:
				res = r.decode(l.Response.Body)
			case l.Response != nil:
				var eb struct {
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				}
				json.Unmarshal(l.Response.Body, &eb)
				res = apiResult{outcome: "errored", permanent: l.Response.StatusCode < 500,
					err: &engine.ResultError{Status: l.Response.StatusCode, Type: eb.Error.Type, Message: eb.Error.Message}}
			case l.Error != nil:
				o := strings.TrimPrefix(l.Error.Code, "batch_")
				if o == "cancelled" {
					o = "canceled"
				}
				res = apiResult{outcome: o, err: &engine.ResultError{Type: o, Message: l.Error.Message}}
			}
			out[l.CustomID] = res
			return nil
		})
		if err != nil {
			return nil, false, err
		}
	}
	return out, true, nil
}

// decode reads a succeeded request's body with the provider's own decoder.
func (r *apiRun) decode(body []byte) apiResult {
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body))}
	out, o := r.a.Provider.Decode(resp, r.clk.Now())
	if o.Kind != strategies.Success {
		_, typ, msg := provider.Describe(o)
		return apiResult{outcome: "errored", permanent: true, err: &engine.ResultError{Status: 200, Type: cmp.Or(typ, "decode_error"), Message: msg}}
	}
	return apiResult{outcome: "succeeded", resp: out}
}

// httpError is an API's refusal.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string {
	b := e.body
	if len(b) > 300 {
		b = b[:300] + "…"
	}
	return fmt.Sprintf("status %d: %s", e.status, b)
}

// request makes one request to the batch API with the provider's
// credentials.
func (r *apiRun) request(ctx context.Context, method, url string, body []byte, contentType string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if r.openai {
		if r.a.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+r.a.APIKey)
		}
	} else {
		req.Header.Set("Anthropic-Version", "2023-06-01")
		if r.a.APIKey != "" {
			req.Header.Set("X-Api-Key", r.a.APIKey)
		}
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, provider.Redact(err, r.a.APIKey)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, &httpError{status: resp.StatusCode, body: string(b)}
	}
	return resp, nil
}

// call makes a request and decodes its JSON answer into v, retrying
// connection failures and server errors with backoff (a batch API call
// is idempotent here but for creations, whose retry the state file's
// intent covers).
func (r *apiRun) call(ctx context.Context, method, url string, body []byte, contentType string, v any) error {
	wait := 500 * time.Millisecond
	for try := 0; ; try++ {
		resp, err := r.request(ctx, method, url, body, contentType)
		if err == nil {
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				return fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
			}
			return nil
		}
		var he *httpError
		// A creation is never sent twice: one that may have been made is
		// resolved by the next run, through the state file's intent.
		if errors.As(err, &he) && he.status < 500 || method == http.MethodPost || try >= 5 || ctx.Err() != nil {
			return err
		}
		if err := r.clk.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, 8*time.Second)
	}
}

// stream reads a JSONL download line by line.
func (r *apiRun) stream(ctx context.Context, url string, fn func([]byte) error) error {
	resp, err := r.request(ctx, http.MethodGet, url, nil, "")
	if err != nil {
		return fmt.Errorf("downloading %s: %w", url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// loadState reads the state file, or starts one with a fresh token.
func (r *apiRun) loadState() error {
	data, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.state = apiState{Version: 1, Provider: r.a.Provider.Name(), Token: newToken()}
		return nil
	case err != nil:
		return fmt.Errorf("state file: %w", err)
	}
	if err := json.Unmarshal(data, &r.state); err != nil {
		return fmt.Errorf("state file %s: %v (not a state file of loadgen batch --via batch-api? move it away)", r.path, err)
	}
	if r.state.Version != 1 || r.state.Token == "" {
		return fmt.Errorf("state file %s: version %d, token %q: not a state file this loadgen reads", r.path, r.state.Version, r.state.Token)
	}
	if r.state.Provider != r.a.Provider.Name() {
		return fmt.Errorf("state file %s: its batches are %s's, this run's provider is %s: name another output, or move the state file away", r.path, r.state.Provider, r.a.Provider.Name())
	}
	return nil
}

// saveState writes the state file: to a temporary file, synced, renamed
// over it, so a kill leaves one whole version or the other.
func (r *apiRun) saveState() error {
	data, err := json.Marshal(r.state)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), filepath.Base(r.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), r.path)
	}
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// newToken is a run's random token: six base62 characters.
func newToken() string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 6)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(62))
		b[i] = digits[n.Int64()]
	}
	return string(b)
}
