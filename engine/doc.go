// Package engine owns ratelab's fan-out runtime: items flow to bounded
// workers, each admitted by a strategy and sent by a provider client, and
// every item ends as one Result delivered to the run's sinks.
package engine
