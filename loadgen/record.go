package loadgen

import (
	"net/http"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/record"
)

// recordInto makes tg's HTTP client record every attempt in opt.Record,
// each line labelled with the row's name, timed on the row's clock.
func (opt Options) recordInto(tg *target, row string) {
	if opt.Record == nil {
		return
	}
	base := tg.http.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	tr := &record.Transport{Base: base, W: opt.Record, Run: row}
	if tg.clock != nil {
		tr.Now = tg.clock.Now
	} else {
		tr.Now = clock.Or(nil).Now
	}
	tg.http = &http.Client{Transport: tr}
}
