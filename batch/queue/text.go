package queue

import (
	"fmt"
	"io"
)

// WriteText says what the enqueue did, as loadgen batch enqueue does.
func (res Enqueued) WriteText(w io.Writer) {
	switch {
	case res.Recreated:
		fmt.Fprintf(w, "job %s re-created (Redis had lost it): %d items, %d added, %d already recorded by workers\n", res.Job, res.Items, res.Added, res.Skipped)
	case res.Created:
		fmt.Fprintf(w, "job %s: %d items enqueued from %s\n", res.Job, res.Added, res.Input)
	case res.Resumed > 0:
		fmt.Fprintf(w, "job %s: interrupted enqueue resumed from line %d: %d items added\n", res.Job, res.Resumed, res.Added)
	default:
		fmt.Fprintf(w, "job %s: %s is enqueued already (%d items); nothing added\n", res.Job, res.Input, res.Items)
	}
	if res.Cleared != "" {
		fmt.Fprintf(w, "job %s: stop cleared (it was: %s); start the workers again\n", res.Job, res.Cleared)
	}
}

// WriteText prints the status as loadgen batch status does.
func (st JobStatus) WriteText(w io.Writer) {
	enq := "enqueued"
	if !st.Enqueued {
		enq = fmt.Sprintf("enqueueing (at line %d)", st.NextLine)
	}
	fmt.Fprintf(w, "job %s: %s (sha256 %.12s…), %d items, %s; %s\n", st.Job, st.Input, st.Digest, st.Items, enq, st.State)
	if st.Reason != "" {
		fmt.Fprintf(w, "  stopped by %s: %s\n", st.StoppedBy, st.Reason)
	}
	pct := 0.0
	if st.Items > 0 {
		pct = 100 * float64(st.Done) / float64(st.Items)
	}
	fmt.Fprintf(w, "  done       %d/%d (%.1f %%)\n", st.Done, st.Items, pct)
	fmt.Fprintf(w, "  pending    %d (taken, not acknowledged)\n", st.Pending)
	fmt.Fprintf(w, "  waiting    %d\n", st.Waiting)
	fmt.Fprintf(w, "  taken over %d (from workers silent past their lease)\n", st.Reclaimed)
	if len(st.Workers) == 0 {
		return
	}
	fmt.Fprintf(w, "  %-24s %-12s %9s %7s %8s %8s %10s\n", "worker", "state", "recorded", "failed", "items/s", "pending", "last seen")
	for _, ws := range st.Workers {
		fmt.Fprintf(w, "  %-24s %-12s %9d %7d %8.1f %8d %9.1fs\n", ws.Name, ws.State, ws.Recorded, ws.Failed, ws.Rate, ws.Pending, ws.SilentSeconds)
	}
}

// WriteText prints the merged report as loadgen batch collect does.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "collected %d items into %s", r.Items, r.Output)
	if r.Expected > 0 {
		fmt.Fprintf(w, " (of %d; %d missing)", r.Expected, r.Missing)
	}
	fmt.Fprintf(w, "; %d duplicate lines dropped", r.Duplicates)
	if r.Torn > 0 {
		fmt.Fprintf(w, ", %d torn last lines ignored", r.Torn)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-28s %8s %8s %6s %6s %9s %8s %8s %8s %8s %8s\n", "output", "lines", "kept", "dups", "failed", "attempts", "wall s", "items/s", "p50 s", "p99 s", "max s")
	row := func(x *WorkerReport) {
		fmt.Fprintf(w, "  %-28s %8d %8d %6d %6d %9d %8.2f %8.1f %8.3f %8.3f %8.3f\n", x.File, x.Lines, x.Kept, x.Duplicates, x.Failed, x.Attempts,
			x.WallSeconds, x.Rate, x.EndToEnd.P50, x.EndToEnd.P99, x.EndToEnd.Max)
	}
	for i := range r.Workers {
		row(&r.Workers[i])
	}
	row(&r.Total)
}
