package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
)

// Heartbeat is how often a worker refreshes the items it holds, checks the
// job's state and publishes its row.
const Heartbeat = time.Second

// flushEvery is how often a worker syncs its output and acknowledges what
// it recorded since.
const flushEvery = 20 * time.Millisecond

// take is how many entries one read takes.
const take = 16

// Worker is one process's part of a job: the batch.Queue of its
// batch.Batch. Make one with NewWorker; Close it after the batch.
//
// It takes entries from the job's consumer group (first those the group
// still gives to its name, a restarted worker's), and every Lease/4 takes
// over, with XAUTOCLAIM, the entries another worker has held for longer
// than Lease without refreshing them. Every Heartbeat it refreshes the
// entries it holds (so a call may last any time), publishes its row and
// reads the job's state. An item is acknowledged (XACK, XDEL, and its bit
// in done set) only after the output holding its result was synced, and
// only while this worker still holds it: an item taken over from it is the
// new holder's to acknowledge, and the duplicate result is collect's to
// drop.
type Worker struct {
	rdb   redis.UniversalClient
	k     keys
	job   string
	name  string
	lease time.Duration
	logf  func(string, ...any)
	// enqueueHint is the command that enqueues the job again.
	enqueueHint string
	ownRDB      bool // Join made rdb: Finish closes it

	out  *os.File
	path string

	lastOK  atomic.Int64 // UnixNano of the last Redis round trip that worked
	hbStop  context.CancelFunc
	hbDone  chan struct{}
	started time.Time

	mu        sync.Mutex
	gen       string
	lost      bool // the job vanished and has not come back yet
	stopped   error
	doneLines []int32 // every line the output holds, to re-assert
	toAck     []int   // recorded, not yet synced and acknowledged
	buf       []redis.XMessage
	backlog   bool // still reading the entries the group gives to this name
	lastClaim time.Time
	redisDown bool
	// safe holds, for each line this worker took, until when no other
	// worker can have taken it over: the time the read or heartbeat that
	// last set its idle time to zero was sent, plus the lease (another
	// worker's XAUTOCLAIM takes only entries idle for longer). Held needs
	// no round trip before that.
	safe map[int]time.Time

	// counters for the worker's row
	recorded, failed, skipped, reclaimed, dupAcks int
	// heldChecks counts Held's round trips, lostItems the items it found
	// taken over.
	heldChecks, lostItems int
}

// WorkerOptions configure NewWorker.
type WorkerOptions struct {
	// Name is the consumer's name in the group; empty means HOST-PID.
	Name string
	// Lease is how long an item held by a silent worker stays with it;
	// zero means DefaultLease.
	Lease time.Duration
	// Logf prints what the worker says (a vanished job, Redis lost).
	Logf func(format string, args ...any)
	// EnqueueHint is the command an operator runs to enqueue the job again,
	// quoted in the message when the job vanishes.
	EnqueueHint string
}

// NewWorker joins job name's consumer group as a worker.
func NewWorker(ctx context.Context, rdb redis.UniversalClient, name string, opt WorkerOptions) (*Worker, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	w := &Worker{rdb: rdb, k: keysOf(name), job: name, name: opt.Name, lease: opt.Lease, logf: opt.Logf,
		enqueueHint: opt.EnqueueHint, backlog: true, safe: make(map[int]time.Time)}
	if w.name == "" {
		host, _ := os.Hostname()
		w.name = host + "-" + strconv.Itoa(os.Getpid())
	}
	if w.lease <= 0 {
		w.lease = DefaultLease
	}
	if w.lease < 3*flushEvery {
		return nil, fmt.Errorf("--lease: at least %s, got %s", 3*flushEvery, w.lease)
	}
	if w.logf == nil {
		w.logf = func(string, ...any) {}
	}
	gen, err := rdb.HGet(ctx, w.k.job, "gen").Result()
	switch {
	case errors.Is(err, redis.Nil):
		w.logf("job %q is not enqueued yet; waiting for it (%s)", name, w.enqueueHint)
	case err != nil:
		return nil, fmt.Errorf("queue: job %q: %w", name, err)
	}
	w.gen = gen
	return w, nil
}

// Join dials the Redis at url (Dial) and joins job name's consumer group
// as a worker (NewWorker), which then owns the connection: Finish closes
// it. Its errors are Dial's and NewWorker's.
func Join(ctx context.Context, url, name string, opt WorkerOptions) (*Worker, error) {
	rdb, err := Dial(ctx, url)
	if err != nil {
		return nil, err
	}
	w, err := NewWorker(ctx, rdb, name, opt)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	w.ownRDB = true
	return w, nil
}

// Finish ends the worker's part once its batch has returned err: it
// closes it (Close) with the state err means — stopped for a spent quota
// (batch.ErrQuota), interrupted for any other error, else finished — and
// the connection Join made. It returns err, or Close's error when err is
// nil.
func (w *Worker) Finish(err error) error {
	state := "finished"
	switch {
	case errors.Is(err, batch.ErrQuota):
		state = "stopped"
	case err != nil:
		state = "interrupted"
	}
	if cerr := w.Close(state); cerr != nil && err == nil {
		err = cerr
	}
	if w.ownRDB {
		w.rdb.Close()
	}
	return err
}

// Name is the worker's consumer name.
func (w *Worker) Name() string { return w.name }

// Start implements batch.Queue: it reads which lines the output holds,
// re-asserts them to the job, and starts the heartbeat.
func (w *Worker) Start(ctx context.Context, path string, out *os.File) error {
	w.out, w.path = out, path
	w.started = time.Now()
	if err := out.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	info, err := out.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, err = engine.ReadJSONL(io.NewSectionReader(out, 0, info.Size()), func(r engine.Result) error {
		w.doneLines = append(w.doneLines, int32(r.Index+1))
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.reassert(ctx); err != nil && !isConnErr(err) {
		return err
	}
	w.up()
	hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.hbStop, w.hbDone = stop, make(chan struct{})
	go w.loop(hctx)
	return nil
}

// reassert sets the done bit of every line the output holds.
func (w *Worker) reassert(ctx context.Context) error {
	w.mu.Lock()
	lines := append([]int32(nil), w.doneLines...)
	w.mu.Unlock()
	for len(lines) > 0 {
		n := min(len(lines), 10000)
		_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, l := range lines[:n] {
				p.SetBit(ctx, w.k.done, int64(l), 1)
			}
			return nil
		})
		if err != nil {
			return err
		}
		lines = lines[n:]
	}
	return nil
}

// Next implements batch.Queue.
func (w *Worker) Next(ctx context.Context) (int, []byte, error) {
	for {
		w.mu.Lock()
		if w.stopped != nil {
			err := w.stopped
			w.mu.Unlock()
			return 0, nil, err
		}
		if len(w.buf) > 0 {
			m := w.buf[0]
			w.buf = w.buf[1:]
			w.mu.Unlock()
			line, err := lineOf(m.ID)
			if err != nil {
				return 0, nil, err
			}
			d, _ := m.Values["d"].(string)
			return line, []byte(d), nil
		}
		lost := w.lost
		w.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		if lost {
			if err := sleep(ctx, Heartbeat/4); err != nil {
				return 0, nil, err
			}
			continue
		}
		msgs, err := w.fetch(ctx)
		switch {
		case isNoGroup(err):
			w.vanished(ctx)
			continue
		case isConnErr(err) && ctx.Err() == nil:
			w.down(err)
			if err := sleep(ctx, 250*time.Millisecond); err != nil {
				return 0, nil, err
			}
			continue
		case err != nil:
			return 0, nil, err
		}
		w.up()
		if len(msgs) == 0 {
			fin, err := w.finishedJob(ctx)
			if err == nil && fin {
				return 0, nil, io.EOF
			}
			continue
		}
		msgs, err = w.dropDone(ctx, msgs)
		if err != nil {
			continue // Redis answered the read; the next one will tell
		}
		w.mu.Lock()
		w.buf = append(w.buf, msgs...)
		w.mu.Unlock()
	}
}

// fetch takes entries: the group's entries for this name first, then
// every Lease/4 the ones idle longer than Lease, else new ones (waiting up
// to half a heartbeat for them).
func (w *Worker) fetch(ctx context.Context) ([]redis.XMessage, error) {
	w.mu.Lock()
	backlog := w.backlog
	claim := time.Since(w.lastClaim) >= w.lease/4
	w.mu.Unlock()
	if backlog {
		res, err := w.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: w.name,
			Streams: []string{w.k.items, "0"}, Count: take * 4}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		var msgs, gone []redis.XMessage
		if len(res) > 0 {
			for _, m := range res[0].Messages {
				if m.Values == nil || m.Values["d"] == nil {
					gone = append(gone, m) // acknowledged by someone: deleted
				} else {
					msgs = append(msgs, m)
				}
			}
		}
		if len(gone) > 0 {
			ids := make([]string, len(gone))
			for i, m := range gone {
				ids[i] = m.ID
			}
			w.rdb.XAck(ctx, w.k.items, Group, ids...)
		}
		if len(msgs) == 0 && len(gone) == 0 {
			w.mu.Lock()
			w.backlog = false
			w.mu.Unlock()
		}
		if len(msgs) > 0 || len(gone) > 0 {
			return msgs, nil
		}
	}
	if claim {
		w.mu.Lock()
		w.lastClaim = time.Now()
		w.mu.Unlock()
		sent := time.Now()
		msgs, _, err := w.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: w.k.items, Group: Group,
			MinIdle: w.lease, Start: "0-0", Count: take * 4, Consumer: w.name}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		if len(msgs) > 0 {
			w.taken(msgs, sent)
			w.mu.Lock()
			w.reclaimed += len(msgs)
			w.mu.Unlock()
			w.rdb.HIncrBy(ctx, w.k.stats, "reclaimed", int64(len(msgs)))
			w.logf("took over %d items held by a worker silent for more than %s", len(msgs), w.lease)
			return msgs, nil
		}
	}
	sent := time.Now()
	res, err := w.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: w.name,
		Streams: []string{w.k.items, ">"}, Count: take, Block: Heartbeat / 2}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	w.taken(res[0].Messages, sent)
	return res[0].Messages, nil
}

// taken notes entries a read sent at sent gave this worker with their
// idle time zero (new entries, or ones XAUTOCLAIM took over): none can be
// taken from it before sent plus the lease. The entries a read of the
// group's history gives back (a restarted worker's) are not noted: Held
// asks Redis about them.
func (w *Worker) taken(msgs []redis.XMessage, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range msgs {
		if line, err := lineOf(m.ID); err == nil {
			w.safe[line] = sent.Add(w.lease)
		}
	}
}

// heldMargin is how long before a lease's end Held asks Redis rather than
// trust it: the clocks' drift over a lease, and Redis's own time of the
// read (after it was sent), are far below it.
func (w *Worker) heldMargin() time.Duration { return w.lease / 4 }

// heldScript tells whether this consumer holds an entry and, when it does,
// resets its idle time (as the heartbeat does), atomically: an entry
// another worker holds is left to it. KEYS items; ARGV group consumer id.
// It returns 1 when held, 0 when not (another's, acknowledged or gone).
var heldScript = redis.NewScript(`
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if type(p) == 'table' and p[1] and p[1][2] == ARGV[2] then
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
  return 1
end
return 0
`)

// Held implements batch.QueueHolder: whether this worker still holds the
// item of line. Within its lease (less heldMargin) of the last time this
// worker set its idle time to zero (the read that took it, the last
// heartbeat that refreshed it) it does, and Held answers with no round
// trip: in a worker that is not stalled, every call. After a stall longer
// than that (the process frozen, Redis cut off), it asks Redis, one script
// (XPENDING for the entry, XCLAIM to itself only if it is its own), and
// an item another worker took over in the meantime is not held. When Redis
// does not answer it says held: the result, a duplicate at worst, is
// collect's to drop.
func (w *Worker) Held(line int) bool {
	now := time.Now()
	w.mu.Lock()
	until, ok := w.safe[line]
	w.mu.Unlock()
	if ok && now.Add(w.heldMargin()).Before(until) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), Heartbeat)
	defer cancel()
	n, err := heldScript.Run(ctx, w.rdb, []string{w.k.items}, Group, w.name, strconv.Itoa(line)+"-0").Int()
	if err != nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.heldChecks++
	if n == 0 {
		delete(w.safe, line)
		w.lostItems++
		return false
	}
	w.safe[line] = now.Add(w.lease)
	return true
}

// dropDone acknowledges the entries whose line is already done (recorded
// by a worker before the job was lost and enqueued again) and returns the
// others.
func (w *Worker) dropDone(ctx context.Context, msgs []redis.XMessage) ([]redis.XMessage, error) {
	cmds := make([]*redis.IntCmd, len(msgs))
	_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range msgs {
			line, _ := lineOf(m.ID)
			cmds[i] = p.GetBit(ctx, w.k.done, int64(line))
		}
		return nil
	})
	if err != nil {
		return msgs, nil // the read worked: make them, collect drops a duplicate
	}
	keep := msgs[:0]
	var done []any
	for i, m := range msgs {
		if cmds[i].Val() == 1 {
			line, _ := lineOf(m.ID)
			done = append(done, line)
			continue
		}
		keep = append(keep, m)
	}
	if len(done) > 0 {
		w.ack(ctx, done)
		w.mu.Lock()
		w.skipped += len(done)
		w.mu.Unlock()
	}
	return keep, nil
}

// finishedJob reports whether every item of the job is acknowledged: its
// enqueue complete and its stream empty.
func (w *Worker) finishedJob(ctx context.Context) (bool, error) {
	var complete *redis.StringCmd
	var n *redis.IntCmd
	_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		complete = p.HGet(ctx, w.k.job, "complete")
		n = p.XLen(ctx, w.k.items)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	w.mu.Lock()
	pendingAcks := len(w.toAck)
	w.mu.Unlock()
	return complete.Val() == "1" && n.Val() == 0 && pendingAcks == 0, nil
}

// Skip implements batch.Queue: the output holds the line already.
func (w *Worker) Skip(line int, _ string) {
	w.mu.Lock()
	delete(w.safe, line)
	w.toAck = append(w.toAck, line)
	w.skipped++
	w.mu.Unlock()
}

// Recorded implements batch.Queue.
func (w *Worker) Recorded(line int, r engine.Result) {
	w.mu.Lock()
	delete(w.safe, line)
	w.toAck = append(w.toAck, line)
	w.doneLines = append(w.doneLines, int32(line))
	w.recorded++
	if !r.OK() {
		w.failed++
	}
	w.mu.Unlock()
}

// Stop implements batch.Queue: the job is stopped for every worker.
func (w *Worker) Stop(cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.rdb.HSet(ctx, w.k.job, "state", "stopped", "reason", cause.Error(), "stopped_by", w.name)
}

// ackScript acknowledges lines this worker holds. KEYS items done; ARGV
// group consumer line…. Every line's done bit is set (its result is in an
// output); an entry is acknowledged and deleted only while this consumer
// holds it. It returns how many were.
var ackScript = redis.NewScript(`
local n = 0
local exists = redis.call('EXISTS', KEYS[1]) == 1
for i = 3, #ARGV do
  redis.call('SETBIT', KEYS[2], ARGV[i], 1)
  if exists then
    local id = ARGV[i] .. '-0'
    local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], id, id, 1)
    if type(p) == 'table' and p[1] and p[1][2] == ARGV[2] then
      redis.call('XACK', KEYS[1], ARGV[1], id)
      redis.call('XDEL', KEYS[1], id)
      n = n + 1
    end
  end
end
return n
`)

// ack acknowledges lines (already durable in some output).
func (w *Worker) ack(ctx context.Context, lines []any) error {
	args := append([]any{Group, w.name}, lines...)
	n, err := ackScript.Run(ctx, w.rdb, []string{w.k.items, w.k.done}, args...).Int()
	if err == nil {
		w.mu.Lock()
		w.dupAcks += len(lines) - n
		w.mu.Unlock()
	}
	return err
}

// flush syncs the output and acknowledges what it holds since the last
// flush. What Redis did not take is kept for the next.
func (w *Worker) flush(ctx context.Context) error {
	w.mu.Lock()
	lines := w.toAck
	w.toAck = nil
	w.mu.Unlock()
	if len(lines) == 0 {
		return nil
	}
	if err := w.out.Sync(); err != nil {
		w.requeueAcks(lines)
		return fmt.Errorf("%s: %w", w.path, err)
	}
	for len(lines) > 0 {
		n := min(len(lines), 500)
		args := make([]any, n)
		for i, l := range lines[:n] {
			args[i] = l
		}
		if err := w.ack(ctx, args); err != nil {
			w.requeueAcks(lines)
			return err
		}
		lines = lines[n:]
	}
	w.up()
	return nil
}

func (w *Worker) requeueAcks(lines []int) {
	w.mu.Lock()
	w.toAck = append(lines, w.toAck...)
	w.mu.Unlock()
}

// loop flushes every flushEvery and beats every Heartbeat until stopped.
func (w *Worker) loop(ctx context.Context) {
	defer close(w.hbDone)
	flush := time.NewTicker(flushEvery)
	defer flush.Stop()
	beat := time.NewTicker(Heartbeat)
	defer beat.Stop()
	w.beat(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			fctx, cancel := context.WithTimeout(ctx, Heartbeat)
			err := w.flush(fctx)
			cancel()
			if err != nil && !isConnErr(err) && ctx.Err() == nil {
				w.logf("acknowledging: %v", err)
			}
		case <-beat.C:
			w.beat(ctx)
			if last := time.Unix(0, w.lastOK.Load()); !w.Reachable() {
				w.down(fmt.Errorf("no answer for %s", time.Since(last).Round(time.Millisecond)))
			}
		}
	}
}

// Row is a worker's row in the job's workers hash.
type Row struct {
	Name      string `json:"name"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	Output    string `json:"output"`
	State     string `json:"state"` // working, finished, stopped, interrupted
	Started   int64  `json:"started_ms"`
	Seen      int64  `json:"seen_ms"` // Redis's time of its last heartbeat
	Recorded  int    `json:"recorded"`
	Failed    int    `json:"failed"`
	Skipped   int    `json:"skipped"`
	Reclaimed int    `json:"reclaimed"`
	// Lost counts the items it found taken over by another worker before
	// their call (Held), and HeldChecks the round trips Held made to tell.
	Lost       int     `json:"lost"`
	HeldChecks int     `json:"held_checks"`
	Held       int     `json:"held"`
	Rate       float64 `json:"rate"` // items recorded a second since it started
}

// beatScript publishes the worker's row with Redis's time and refreshes
// what it holds. KEYS items workers job; ARGV group consumer row-json. It
// returns the job's gen, state, reason and stopped_by, Redis's time, and
// the ids of the entries this consumer holds.
var beatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local row = cjson.decode(ARGV[3])
row['seen_ms'] = now
if row['started_ms'] == 0 then row['started_ms'] = now end
local held = 0
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', 100000, ARGV[2])
if type(p) == 'table' then
  local i = 1
  while i <= #p do
    local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
    for j = i, math.min(i + 999, #p) do args[#args + 1] = p[j][1] end
    args[#args + 1] = 'JUSTID'
    redis.call(unpack(args))
    i = i + 1000
  end
  held = #p
end
row['held'] = held
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode(row))
local h = redis.call('HMGET', KEYS[3], 'gen', 'state', 'reason', 'stopped_by')
local out = {h[1] or '', h[2] or '', h[3] or '', h[4] or '', tostring(now)}
if type(p) == 'table' then
  for _, e in ipairs(p) do out[#out + 1] = e[1] end
end
return out
`)

// beat publishes the row, refreshes what the worker holds and reads the
// job's state: stopped, vanished, or enqueued again.
func (w *Worker) beat(ctx context.Context) {
	row := w.row("working")
	b, _ := json.Marshal(row)
	ctx, cancel := context.WithTimeout(ctx, Heartbeat)
	defer cancel()
	sent := time.Now()
	v, err := beatScript.Run(ctx, w.rdb, []string{w.k.items, w.k.workers, w.k.job}, Group, w.name, string(b)).StringSlice()
	if err != nil {
		if isConnErr(err) {
			w.down(err)
		} else if ctx.Err() == nil {
			w.logf("heartbeat: %v", err)
		}
		return
	}
	w.up()
	gen, state, reason, by := v[0], v[1], v[2], v[3]
	w.refreshed(v[5:], sent)
	w.mu.Lock()
	if state == "stopped" && w.stopped == nil {
		w.stopped = fmt.Errorf("%w: job %q stopped by worker %s: %s", batch.ErrQuota, w.job, by, reason)
	}
	mine, lost := w.gen, w.lost
	w.mu.Unlock()
	switch {
	case gen == "" && !lost:
		w.vanished(ctx)
	case gen != "" && gen != mine:
		if mine != "" || lost {
			w.logf("job %q was lost by Redis and is enqueued again (generation %s): re-asserting this worker's results and going on", w.job, gen)
		}
		w.reassert(ctx)
		w.mu.Lock()
		w.gen, w.lost, w.backlog = gen, false, true
		w.mu.Unlock()
	}
}

// refreshed notes the entries a heartbeat sent at sent found this worker
// holding, their idle time reset: held until sent plus the lease. A line it
// took before the heartbeat was sent that the heartbeat did not find is no
// longer its own (taken over, or acknowledged).
func (w *Worker) refreshed(ids []string, sent time.Time) {
	until := sent.Add(w.lease)
	w.mu.Lock()
	defer w.mu.Unlock()
	found := make(map[int]bool, len(ids))
	for _, id := range ids {
		if line, err := lineOf(id); err == nil {
			found[line] = true
			if w.safe[line].Before(until) {
				w.safe[line] = until
			}
		}
	}
	for line, u := range w.safe {
		if !found[line] && u.Before(until) {
			delete(w.safe, line)
		}
	}
}

// vanished handles a job that is gone from Redis: it says what happened
// and what to do, re-asserts this worker's results and waits for the job.
func (w *Worker) vanished(ctx context.Context) {
	w.mu.Lock()
	if w.lost {
		w.mu.Unlock()
		return
	}
	known := w.gen != ""
	w.lost = true
	w.buf = nil // entries of a stream that is gone
	w.mu.Unlock()
	if !known {
		return // not enqueued yet: NewWorker said so
	}
	w.logf("job %q has vanished from Redis (its stream %s is gone: Redis restarted or was flushed without persistence); no result is lost: this worker's %d are in %s and re-asserted to Redis; enqueue the input again to go on: %s",
		w.job, w.k.items, w.doneCount(), w.path, w.enqueueHint)
	if err := w.reassert(ctx); err != nil && ctx.Err() == nil {
		w.logf("re-asserting: %v", err)
	}
}

func (w *Worker) doneCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.doneLines)
}

func (w *Worker) down(err error) {
	w.mu.Lock()
	was := w.redisDown
	w.redisDown = true
	w.mu.Unlock()
	if !was {
		w.logf("redis unreachable (%v); the calls under way go on and their results are kept; retrying", err)
	}
}

func (w *Worker) up() {
	w.lastOK.Store(time.Now().UnixNano())
	w.mu.Lock()
	was := w.redisDown
	w.redisDown = false
	w.mu.Unlock()
	if was {
		w.logf("redis is back")
	}
}

func (w *Worker) row(state string) Row {
	host, _ := os.Hostname()
	w.mu.Lock()
	defer w.mu.Unlock()
	r := Row{Name: w.name, Host: host, PID: os.Getpid(), Output: w.path, State: state,
		Started: w.started.UnixMilli(), Recorded: w.recorded, Failed: w.failed, Skipped: w.skipped, Reclaimed: w.reclaimed,
		Lost: w.lostItems, HeldChecks: w.heldChecks}
	if s := time.Since(w.started).Seconds(); s > 0 {
		r.Rate = float64(w.recorded) / s
	}
	return r
}

// reachWindow is how long after its last answer Redis counts as
// reachable: a heartbeat, and half of one for a slow round trip.
const reachWindow = Heartbeat + Heartbeat/2

// Reachable implements batch.QueueGate.
func (w *Worker) Reachable() bool {
	return time.Since(time.Unix(0, w.lastOK.Load())) < reachWindow
}

// Admit implements batch.QueueGate: while Redis has not answered for
// reachWindow, this worker starts no call (the others are taking its items
// over, and its share of a shared limit is no longer counted).
func (w *Worker) Admit(ctx context.Context) error {
	for !w.Reachable() {
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes and acknowledges what the output holds, hands the entries
// this worker still holds to the others at once (their idle time set past
// the lease), and publishes its final row with state (finished, stopped,
// interrupted).
func (w *Worker) Close(state string) error {
	if w.hbStop == nil {
		return nil
	}
	w.hbStop()
	<-w.hbDone
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := w.flush(ctx)
	b, _ := json.Marshal(w.row(state))
	beatScript.Run(ctx, w.rdb, []string{w.k.items, w.k.workers, w.k.job}, Group, w.name, string(b))
	if state != "stopped" {
		w.release(ctx)
	}
	return err
}

// releaseScript sets the idle time of this consumer's entries past the
// lease, so the next XAUTOCLAIM of any worker takes them. KEYS items;
// ARGV group consumer idle-ms.
var releaseScript = redis.NewScript(`
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', 100000, ARGV[2])
if type(p) ~= 'table' then return 0 end
for i, e in ipairs(p) do
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, e[1], 'IDLE', ARGV[3], 'JUSTID')
end
return #p
`)

func (w *Worker) release(ctx context.Context) {
	releaseScript.Run(ctx, w.rdb, []string{w.k.items}, Group, w.name, (2 * w.lease).Milliseconds())
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
