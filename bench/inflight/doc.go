// Package inflight holds the test of loadgen's memory per in-flight call:
// bench/inflight.yaml (10,000 workers against a limit of 5,000) scaled down.
package inflight
