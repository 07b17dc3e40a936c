package queue

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/durhist"
	"github.com/ratelab/ratelab/measure"
)

// CollectOptions configure Collect.
type CollectOptions struct {
	// Outputs are the workers' output files.
	Outputs []string
	// Output is the merged file, written to a temporary file beside it and
	// renamed into place.
	Output string
	// ByID orders the merged file by id; otherwise by input line.
	ByID bool
	// Input, when set, is the job's input: every id it holds must have a
	// result, and those that have none are listed.
	Input string
	// Items, when Input is not set, is how many items the job has (its
	// Status), 0 if unknown.
	Items int
}

// Report is what Collect found, with the run's figures merged over the
// workers.
type Report struct {
	Output string `json:"output"`
	// Items is the distinct ids written; Expected the job's items (0 when
	// unknown), Missing those with no result, MissingIDs the first 20.
	Items      int      `json:"items"`
	Expected   int      `json:"expected,omitempty"`
	Missing    int      `json:"missing"`
	MissingIDs []string `json:"missing_ids,omitempty"`
	// Duplicates counts the result lines dropped because another line had
	// the same id (an item taken over from a worker that then finished it
	// too, or made again after a lost Redis).
	Duplicates int `json:"duplicates"`
	// Torn counts torn last lines (a worker killed mid-write), ignored.
	Torn    int            `json:"torn"`
	Total   WorkerReport   `json:"total"`
	Workers []WorkerReport `json:"workers"`
	// Timeline counts results by the second they ended in, from the
	// earliest start: the total and each worker's (summed, not averaged).
	Timeline []TimelinePoint `json:"timeline"`
}

// WorkerReport is one output's figures (or, as Report.Total, all of
// them): the results kept from it, and the latency distributions of those,
// merged for the total as HdrHistograms, not by averaging percentiles.
type WorkerReport struct {
	File         string              `json:"file"`
	Lines        int                 `json:"lines"`
	Kept         int                 `json:"kept"`
	Duplicates   int                 `json:"duplicates"`
	OK           int                 `json:"ok"`
	Failed       int                 `json:"failed"`
	Attempts     int                 `json:"attempts"`
	InputTokens  int64               `json:"input_tokens"`
	OutputTokens int64               `json:"output_tokens"`
	First        time.Time           `json:"first_start"`
	Last         time.Time           `json:"last_end"`
	WallSeconds  float64             `json:"wall_seconds"`
	Rate         float64             `json:"items_per_second"`
	EndToEnd     measure.Percentiles `json:"end_to_end"`
	WaitSlot     measure.Percentiles `json:"wait_slot"`

	e2e, wait durhist.Histogram // engine's latency histogram, so a p99 here is the figure a single-process batch prints
}

// TimelinePoint is one second of the merged timeline.
type TimelinePoint struct {
	T         int   `json:"t"` // seconds since the earliest start
	Completed int   `json:"completed"`
	ByWorker  []int `json:"by_worker"`
}

// entry is where one kept result line is.
type entry struct {
	id    string
	index int
	file  int
	off   int64
	n     int
	ok    bool
}

// Collect merges the workers' outputs into one file holding every id once:
// a success is kept over an error, else the first line read (files in the
// order given). It returns the report; its error is a file error naming
// the file and line. Missing ids are reported, not an error.
func Collect(opt CollectOptions) (*Report, error) {
	if len(opt.Outputs) == 0 {
		return nil, errors.New("collect: name the workers' output files")
	}
	outAbs, _ := filepath.Abs(opt.Output)
	for _, o := range opt.Outputs {
		if a, _ := filepath.Abs(o); a == outAbs {
			return nil, fmt.Errorf("collect: --output %s is one of the files to collect", opt.Output)
		}
	}
	rep := &Report{Output: opt.Output, Total: WorkerReport{File: "total"}}
	byID := make(map[string]int)
	var entries []entry
	files := make([]*os.File, len(opt.Outputs))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	var results []figures // the kept results' figures, by entry index
	for fi, path := range opt.Outputs {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("collect: %w", err)
		}
		files[fi] = f
		wr := WorkerReport{File: path}
		br := bufio.NewReaderSize(f, 256<<10)
		var off int64
		for line := 1; ; line++ {
			b, err := br.ReadBytes('\n')
			if errors.Is(err, io.EOF) {
				if len(bytes.TrimSpace(b)) > 0 {
					rep.Torn++
				}
				break
			}
			if err != nil {
				return nil, fmt.Errorf("collect: %s: %w", path, err)
			}
			n := len(b)
			if len(bytes.TrimSpace(b)) == 0 {
				off += int64(n)
				continue
			}
			var r engine.Result
			if err := json.Unmarshal(b, &r); err != nil || r.ID == "" {
				if err == nil {
					err = errors.New("no id")
				}
				return nil, fmt.Errorf("collect: %s:%d: not a result line of loadgen batch: %v", path, line, err)
			}
			wr.Lines++
			e := entry{id: r.ID, index: r.Index, file: fi, off: off, n: n, ok: r.OK()}
			off += int64(n)
			if i, dup := byID[r.ID]; dup {
				rep.Duplicates++
				if !entries[i].ok && e.ok {
					// A success replaces the error kept so far.
					entries[i] = e
					results[i] = figuresOf(fi, &r)
				}
				wr.Duplicates++
				continue
			}
			byID[r.ID] = len(entries)
			entries = append(entries, e)
			results = append(results, figuresOf(fi, &r))
		}
		rep.Workers = append(rep.Workers, wr)
	}

	// The figures of the kept results.
	var first int64
	for _, k := range results {
		if k.start != 0 && (first == 0 || k.start < first) {
			first = k.start
		}
	}
	for _, k := range results {
		w := &rep.Workers[k.w]
		w.add(&k)
		if first != 0 && k.end != 0 {
			t := int(time.Duration(k.end-first) / time.Second)
			for len(rep.Timeline) <= t {
				rep.Timeline = append(rep.Timeline, TimelinePoint{T: len(rep.Timeline), ByWorker: make([]int, len(opt.Outputs))})
			}
			rep.Timeline[t].Completed++
			rep.Timeline[t].ByWorker[k.w]++
		}
	}
	for i := range rep.Workers {
		w := &rep.Workers[i]
		rep.Total.merge(w)
		w.finish()
	}
	rep.Total.Duplicates = rep.Duplicates
	rep.Total.finish()
	rep.Items = len(entries)

	// Which ids have no result.
	switch {
	case opt.Input != "":
		err := batch.ReadInput(opt.Input, func(line int, in *batch.Line, _ *batch.InputError) bool {
			if in == nil {
				return true
			}
			rep.Expected++
			if _, ok := byID[in.ID]; !ok {
				rep.Missing++
				if len(rep.MissingIDs) < 20 {
					rep.MissingIDs = append(rep.MissingIDs, in.ID)
				}
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("collect: --input: %w", err)
		}
	case opt.Items > 0:
		rep.Expected = opt.Items
		rep.Missing = max(0, opt.Items-rep.Items)
	}

	// Write the kept lines, in order.
	if opt.ByID {
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.id, b.id) })
	} else {
		slices.SortFunc(entries, func(a, b entry) int { return a.index - b.index })
	}
	return rep, writeMerged(opt.Output, files, entries)
}

// writeMerged writes the entries' lines to path through a temporary file
// renamed into place.
func writeMerged(path string, files []*os.File, entries []entry) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 256<<10)
	var buf []byte
	for _, e := range entries {
		buf = slices.Grow(buf[:0], e.n)[:e.n]
		if _, err := files[e.file].ReadAt(buf, e.off); err != nil {
			tmp.Close()
			return fmt.Errorf("collect: %s: %w", files[e.file].Name(), err)
		}
		bw.Write(buf)
	}
	err = bw.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("collect: %s: %w", path, err)
	}
	return nil
}

// figures are what the report needs of one kept result (a million of
// them are held at once, so not the whole Result).
type figures struct {
	w          int32
	ok         bool
	attempts   int32
	in, out    int64
	start, end int64 // UnixNano; 0 when unknown
	waitSlot   time.Duration
}

func figuresOf(w int, r *engine.Result) figures {
	f := figures{w: int32(w), ok: r.OK(), attempts: int32(r.Attempts), in: int64(r.Usage.InputTokens), out: int64(r.Usage.OutputTokens),
		waitSlot: r.Timings.WaitSlot}
	if !r.Timings.Start.IsZero() {
		f.start = r.Timings.Start.UnixNano()
	}
	if !r.Timings.End.IsZero() {
		f.end = r.Timings.End.UnixNano()
	}
	return f
}

func (w *WorkerReport) add(r *figures) {
	w.Kept++
	if r.ok {
		w.OK++
	} else {
		w.Failed++
	}
	w.Attempts += int(r.attempts)
	w.InputTokens += r.in
	w.OutputTokens += r.out
	if r.start != 0 {
		if s := time.Unix(0, r.start).UTC(); w.First.IsZero() || s.Before(w.First) {
			w.First = s
		}
	}
	if r.end != 0 {
		if e := time.Unix(0, r.end).UTC(); e.After(w.Last) {
			w.Last = e
		}
	}
	if r.start != 0 && r.end != 0 {
		w.e2e.Record(time.Duration(r.end - r.start))
	}
	w.wait.Record(r.waitSlot)
}

// merge adds o's counts and histograms into w.
func (w *WorkerReport) merge(o *WorkerReport) {
	w.Lines += o.Lines
	w.Kept += o.Kept
	w.OK += o.OK
	w.Failed += o.Failed
	w.Attempts += o.Attempts
	w.InputTokens += o.InputTokens
	w.OutputTokens += o.OutputTokens
	if !o.First.IsZero() && (w.First.IsZero() || o.First.Before(w.First)) {
		w.First = o.First
	}
	if o.Last.After(w.Last) {
		w.Last = o.Last
	}
	w.e2e.Merge(&o.e2e)
	w.wait.Merge(&o.wait)
}

func (w *WorkerReport) finish() {
	if !w.First.IsZero() && w.Last.After(w.First) {
		w.WallSeconds = w.Last.Sub(w.First).Seconds()
		w.Rate = float64(w.Kept) / w.WallSeconds
	}
	w.EndToEnd, w.WaitSlot = measure.Percentiles(w.e2e.Summary()), measure.Percentiles(w.wait.Summary())
}
