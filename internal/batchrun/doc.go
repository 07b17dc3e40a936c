// Package batchrun runs `loadgen batch`: it builds a batch's strategy,
// clients and checks from its flags and config file, and runs it through
// package batch, one call an item or through the provider's batch API.
//
// The flags stay in cmd/loadgen (batch.go, batchapi.go); the config file is
// a scenario in loadgen's vocabulary (loadgen.LoadBatchConfig), and a
// strategy is built as a scenario's row is (loadgen.OpenStrategy). The
// resumable runner itself, on engine's exported API, is package batch.
//
//	run.go       Options, Report and Run: the steps of one batch, from the
//	             config to the adaptive state saved after it
//	config.go    what the flags choose over the config file: the strategy
//	             (ParseStrategySpec, --only, --shared-*, --provider-strategy),
//	             the provider, model and system-prompt cache; ErrUsage
//	endpoint.go  where the calls go (the embedded mock or a base URL) and
//	             the API key (CommandKey for --api-key-command)
//	routes.go    the client and strategy instance of each provider the
//	             input's lines name in their metadata
//	schema.go    SchemaCheck, the --schema check of every response
//	api.go       RunAPI, the same batch through the provider's batch API
//	text.go      the summaries loadgen batch prints
package batchrun
