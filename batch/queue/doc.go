// Package queue shares one batch between several processes on several machines
// through a Redis Stream. docs/distributed-batch.md is the user's page.
//
// `loadgen batch enqueue` puts a job's items on the stream once, each `loadgen
// batch work` takes items from the job's consumer group and runs them through
// batch.Batch (its Queue), and `loadgen batch collect` merges the workers'
// outputs into one, each id once, with one report.
//
// Every key of a job is under ratelab:batch:{JOB}: (one Redis Cluster hash
// slot), and every multi-key step is one Lua script over those keys:
//
//	job      hash: the input's digest and name, the items' count, how far
//	         the enqueue got (next: the next input line), complete, the
//	         generation (a random id made when the job is created, so that
//	         a worker sees a job that vanished and was enqueued again), and
//	         state/reason when a worker stopped the job (a spent quota)
//	items    the stream: one entry per input line, ID LINE-0, field d the
//	         line's JSON; consumer group "workers"; an entry is deleted
//	         when it is acknowledged
//	done     a bitmap, bit LINE set once some worker's output holds the
//	         line's result (125 KB for a million lines): what lets a
//	         re-enqueue after a lost Redis skip what is done
//	workers  hash: one JSON row per worker (host, pid, counts, last seen)
//	stats    hash: reclaimed
//
//	enqueue.go   Enqueue: validate and digest the input, create the job,
//	             add the lines in chunks
//	worker.go    Worker, the batch.Queue: take, reclaim, acknowledge after
//	             the output is synced, heartbeat, loss of the job
//	status.go    Status: what the job's keys say
//	collect.go   Collect: merge outputs, each id once, and the report
package queue
