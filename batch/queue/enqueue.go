package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/batch"
)

// chunk is how many lines one enqueue script adds.
const chunk = 1000

// Quiet is how long an enqueue that recreates a lost job waits before it
// adds the items, so that every live worker has noticed the loss and
// re-asserted the results its output holds (two heartbeats and a second).
const Quiet = 2*Heartbeat + time.Second

// Enqueued is what Enqueue did.
type Enqueued struct {
	Job     string `json:"job"`
	Input   string `json:"input"`
	Digest  string `json:"digest"` // sha256 of the input file
	Items   int    `json:"items"`  // the input's items
	Added   int    `json:"added"`  // the entries this call added to the stream
	Skipped int    `json:"skipped"`
	// Created: the job did not exist; Recreated: it did not, but workers
	// had left results in it (Redis lost the job: restarted or flushed).
	Created   bool `json:"created"`
	Recreated bool `json:"recreated,omitempty"`
	// Resumed is the input line an interrupted enqueue went on from.
	Resumed int `json:"resumed_from_line,omitempty"`
	// Cleared is the stop reason this enqueue cleared (the job had been
	// stopped by a spent quota).
	Cleared string `json:"cleared_stop,omitempty"`
}

// createScript creates a job unless it exists. KEYS job items done
// workers; ARGV digest input items gen. It returns {"exists", digest,
// input, next, complete, gen, state, reason} or {"created", lost}.
var createScript = redis.NewScript(`
local d = redis.call('HGET', KEYS[1], 'digest')
if d then
  local h = redis.call('HMGET', KEYS[1], 'input', 'next', 'complete', 'gen', 'state', 'reason')
  return {'exists', d, h[1] or '', h[2] or '1', h[3] or '0', h[4] or '', h[5] or '', h[6] or ''}
end
local lost = redis.call('EXISTS', KEYS[3]) + redis.call('EXISTS', KEYS[4])
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'digest', ARGV[1], 'input', ARGV[2], 'items', ARGV[3], 'gen', ARGV[4],
  'next', 1, 'complete', 0, 'created', t[1] * 1000 + math.floor(t[2] / 1000))
redis.pcall('XGROUP', 'CREATE', KEYS[2], 'workers', '0', 'MKSTREAM')
return {'created', tostring(lost)}
`)

// addScript adds one chunk. KEYS job items done; ARGV gen from next
// (line, data)…. It returns {added, skipped}, or {-1, next} when another
// enqueue moved the job on (or it is another generation).
var addScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'gen', 'next')
if h[1] ~= ARGV[1] or tonumber(h[2]) ~= tonumber(ARGV[2]) then
  return {-1, tonumber(h[2]) or 0}
end
local added, skipped = 0, 0
for i = 4, #ARGV, 2 do
  if redis.call('GETBIT', KEYS[3], ARGV[i]) == 1 then
    skipped = skipped + 1
  else
    redis.call('XADD', KEYS[2], ARGV[i] .. '-0', 'd', ARGV[i+1])
    added = added + 1
  end
end
redis.call('HSET', KEYS[1], 'next', ARGV[3])
return {added, skipped}
`)

// Enqueue puts the items of input on job name's stream, once: the input is
// validated (as `loadgen batch` validates it, duplicate ids refused) and
// digested first, and the job remembers the digest and how far it got, so
// enqueueing the same input again adds nothing, an interrupted enqueue
// goes on where it stopped, and another input under the same name is
// refused. A job that vanished (Redis restarted or flushed without
// persistence) is created again: after Quiet, so that the live workers
// re-assert what they hold, the lines already done are not added.
func Enqueue(ctx context.Context, rdb redis.UniversalClient, name, input string, logf func(string, ...any)) (Enqueued, error) {
	res := Enqueued{Job: name, Input: input}
	if err := CheckName(name); err != nil {
		return res, err
	}
	digest, items, err := checkInput(ctx, input)
	if err != nil {
		return res, err
	}
	res.Digest, res.Items = digest, items
	k := keysOf(name)
	gen := newGen()
	v, err := createScript.Run(ctx, rdb, []string{k.job, k.items, k.done, k.workers},
		digest, filepath.Base(input), items, gen).StringSlice()
	if err != nil {
		return res, fmt.Errorf("queue: creating job %q: %w", name, err)
	}
	next := 1
	if v[0] == "exists" {
		if v[1] != digest {
			return res, fmt.Errorf("job %q holds another input (%s, sha256 %s…; this one is %s…): enqueue it under another --name, or delete the job with loadgen batch status --delete",
				name, v[2], v[1][:12], digest[:12])
		}
		next, _ = strconv.Atoi(v[3])
		gen = v[5]
		if v[6] == "stopped" {
			// The operator's step to resume a job a spent quota stopped.
			if err := rdb.HDel(ctx, k.job, "state", "reason", "stopped_by").Err(); err != nil {
				return res, err
			}
			res.Cleared = v[7]
		}
		if v[4] == "1" {
			return res, nil
		}
		res.Resumed = next
	} else {
		res.Created = true
		if v[1] != "0" {
			res.Recreated = true
			if logf != nil {
				logf("job %q was lost (Redis restarted or flushed?) and its workers left their results in it; waiting %s for every live worker to re-assert its results before re-adding the items not done", name, Quiet)
			}
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(Quiet):
			}
		}
	}

	// Add the lines from next on, a chunk per script.
	args := make([]any, 0, 3+2*chunk)
	from := next
	flush := func(upTo int) error {
		args[2] = upTo
		r, err := addScript.Run(ctx, rdb, []string{k.job, k.items, k.done}, args...).Int64Slice()
		if err != nil {
			return fmt.Errorf("queue: adding items to job %q: %w", name, err)
		}
		if r[0] < 0 {
			return fmt.Errorf("job %q: another enqueue is adding its items (it is at line %d, this one at %d); let it finish, or run this again once it has", name, r[1], from)
		}
		res.Added += int(r[0])
		res.Skipped += int(r[1])
		from = upTo
		args = args[:3]
		return nil
	}
	args = append(args, gen, 0, 0)
	last := 0
	err = batch.ReadInput(input, func(line int, in *batch.Line, _ *batch.InputError) bool {
		last = line
		if line < next {
			return true
		}
		if len(args) == 3 {
			args[1] = line
			from = line
		}
		data, merr := json.Marshal(in)
		if merr != nil {
			err = merr
			return false
		}
		args = append(args, line, data)
		if len(args) >= 3+2*chunk {
			if err = flush(line + 1); err != nil {
				return false
			}
		}
		return ctx.Err() == nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && len(args) > 3 {
		err = flush(last + 1)
	}
	if err != nil {
		return res, err
	}
	if err := rdb.HSet(ctx, k.job, "complete", 1).Err(); err != nil {
		return res, err
	}
	return res, nil
}

// checkInput validates input as a batch does (every line, duplicate ids),
// and returns its sha256 and its number of items.
func checkInput(ctx context.Context, input string) (string, int, error) {
	f, err := os.Open(input)
	if err != nil {
		return "", 0, fmt.Errorf("--input: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", 0, fmt.Errorf("--input: %w", err)
	}
	seed0, seed1 := maphash.MakeSeed(), maphash.MakeSeed()
	seen := make(map[[2]uint64]int32)
	var bad batch.InputErrors
	items := 0
	add := func(ie *batch.InputError) {
		bad.Total++
		if len(bad.Errs) < batch.MaxInputErrors {
			bad.Errs = append(bad.Errs, ie)
		}
	}
	err = batch.ReadInput(input, func(line int, in *batch.Line, ie *batch.InputError) bool {
		if ie != nil {
			add(ie)
			return true
		}
		k := [2]uint64{maphash.String(seed0, in.ID), maphash.String(seed1, in.ID)}
		if prev, dup := seen[k]; dup {
			add(&batch.InputError{File: input, Line: line, Path: "id", Message: fmt.Sprintf("duplicate id %q (first on line %d)", in.ID, prev)})
			return true
		}
		seen[k] = int32(line)
		items++
		return line%4096 != 0 || ctx.Err() == nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return "", 0, err
	}
	if bad.Total > 0 {
		return "", 0, &bad
	}
	if items == 0 {
		return "", 0, fmt.Errorf("%s: no items", input)
	}
	return hex.EncodeToString(h.Sum(nil)), items, nil
}
