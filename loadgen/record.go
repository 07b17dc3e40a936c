package loadgen

import (
	"net/http"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/record"
)

// recordInto makes tg's HTTP client record every attempt in opt.Record,
// each line labelled with the row's name, timed on the row's clock.
func (opt Options) recordInto(tg *target, row string) {
	tg.http = recordClient(tg.http, opt.Record, row, tg.clock)
}

// recordClient returns hc recording every attempt in w (hc itself when w is
// nil), each line labelled run and timed on c (nil: real time).
func recordClient(hc *http.Client, w *record.Writer, run string, c clock.Clock) *http.Client {
	if w == nil {
		return hc
	}
	base := http.DefaultTransport
	if hc != nil && hc.Transport != nil {
		base = hc.Transport
	}
	return &http.Client{Transport: &record.Transport{Base: base, W: w, Run: run, Now: clock.Or(c).Now}}
}
