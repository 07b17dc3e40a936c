package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ErrNoJob is what Status answers for a job Redis does not hold.
var ErrNoJob = errors.New("queue: no such job")

// JobStatus is what a job's keys say.
type JobStatus struct {
	Job       string         `json:"job"`
	Input     string         `json:"input"`
	Digest    string         `json:"digest"`
	Items     int            `json:"items"`
	Enqueued  bool           `json:"enqueued"`            // every item is on the stream
	NextLine  int            `json:"next_line,omitempty"` // while enqueueing: the next input line
	Done      int            `json:"done"`                // items some output holds
	Pending   int            `json:"pending"`             // taken by a worker, not acknowledged
	Waiting   int            `json:"waiting"`             // on the stream, not taken
	Reclaimed int            `json:"reclaimed"`           // taken over from silent workers
	State     string         `json:"state"`               // working, finished, stopped
	Reason    string         `json:"reason,omitempty"`    // why it stopped
	StoppedBy string         `json:"stopped_by,omitempty"`
	Workers   []WorkerStatus `json:"workers"`
}

// WorkerStatus is a worker's row with what the group says of it.
type WorkerStatus struct {
	Row
	// Pending is the entries the group gives it now.
	Pending int `json:"pending"`
	// SilentSeconds is the time since its last heartbeat, by Redis's clock.
	SilentSeconds float64 `json:"silent_seconds"`
}

// Status reads job name's state.
func Status(ctx context.Context, rdb redis.UniversalClient, name string) (JobStatus, error) {
	st := JobStatus{Job: name}
	if err := CheckName(name); err != nil {
		return st, err
	}
	k := keysOf(name)
	var job *redis.MapStringStringCmd
	var done, xlen *redis.IntCmd
	var workers *redis.MapStringStringCmd
	var reclaimed *redis.StringCmd
	var now *redis.TimeCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		job = p.HGetAll(ctx, k.job)
		done = p.BitCount(ctx, k.done, nil)
		xlen = p.XLen(ctx, k.items)
		workers = p.HGetAll(ctx, k.workers)
		reclaimed = p.HGet(ctx, k.stats, "reclaimed")
		now = p.Time(ctx)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return st, fmt.Errorf("queue: job %q: %w", name, err)
	}
	h := job.Val()
	if len(h) == 0 {
		return st, fmt.Errorf("%w: Redis holds no job %q (not enqueued yet, or lost with a Redis restart or flush: enqueue its input again)", ErrNoJob, name)
	}
	st.Input, st.Digest = h["input"], h["digest"]
	st.Items, _ = strconv.Atoi(h["items"])
	st.Enqueued = h["complete"] == "1"
	if !st.Enqueued {
		st.NextLine, _ = strconv.Atoi(h["next"])
	}
	st.State, st.Reason, st.StoppedBy = h["state"], h["reason"], h["stopped_by"]
	st.Done = int(done.Val())
	st.Reclaimed, _ = strconv.Atoi(reclaimed.Val())
	pend := map[string]int64{}
	if xlen.Val() > 0 {
		p, err := rdb.XPending(ctx, k.items, Group).Result()
		if err == nil {
			st.Pending = int(p.Count)
			pend = p.Consumers
		}
	}
	st.Waiting = int(xlen.Val()) - st.Pending
	if st.State == "" {
		st.State = "working"
		if st.Enqueued && xlen.Val() == 0 {
			st.State = "finished"
		}
	}
	nowMS := now.Val().UnixMilli()
	for _, v := range workers.Val() {
		var ws WorkerStatus
		if json.Unmarshal([]byte(v), &ws.Row) != nil {
			continue
		}
		ws.Pending = int(pend[ws.Name])
		ws.SilentSeconds = float64(nowMS-ws.Seen) / 1000
		st.Workers = append(st.Workers, ws)
	}
	slices.SortFunc(st.Workers, func(a, b WorkerStatus) int { return int(a.Started - b.Started) })
	return st, nil
}

// Delete removes every key of job name.
func Delete(ctx context.Context, rdb redis.UniversalClient, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	k := keysOf(name)
	return rdb.Del(ctx, k.job, k.items, k.done, k.workers, k.stats).Err()
}
