package mock_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/ratelab/ratelab/mock"
)

// TestBatchesReset: Server.Reset forgets every batch and file, and the
// queue behind them, as a new server has none: what was created before is
// gone (404, absent from the lists), BatchStats starts again at zero, a
// full processing queue is empty, and a new batch is scheduled from the
// reset, not behind the forgotten ones.
func TestBatchesReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, `
api_keys: [`+sdkKey+`]
batches: {drain_rate: 1, startup: 1m, anthropic: {queue_requests: 3}}
`)
		ac := h.anthropic(aoption.WithMaxRetries(0))
		oc := h.openai(ooption.WithMaxRetries(0))
		ctx := context.Background()
		three := anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
			anthropicBatchRequest("a", 5, false), anthropicBatchRequest("b", 5, false), anthropicBatchRequest("c", 5, false),
		}}
		ab, err := ac.Messages.Batches.New(ctx, three)
		if err != nil {
			t.Fatal(err)
		}
		var aErr *anthropic.Error
		if _, err := ac.Messages.Batches.New(ctx, three); !errors.As(err, &aErr) || aErr.StatusCode != 429 {
			t.Fatalf("a second batch over queue_requests 3: %v, want 429", err)
		}
		f, err := oc.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader(openaiBatchLines(2, sdkOpenAIModel, 8)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		if err != nil {
			t.Fatal(err)
		}
		ob, err := oc.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Fatal(err)
		}
		if st := h.srv.BatchStats(); st.Batches != 2 || st.Requests != 5 {
			t.Fatalf("before Reset: %+v, want 2 batches of 5 requests", st)
		}

		h.srv.Reset()

		if st := h.srv.BatchStats(); st != (mock.BatchStats{}) {
			t.Errorf("BatchStats after Reset: %+v, want zero", st)
		}
		if _, err := ac.Messages.Batches.Get(ctx, ab.ID, anthropic.MessageBatchGetParams{}); !errors.As(err, &aErr) || aErr.StatusCode != 404 {
			t.Errorf("Anthropic batch after Reset: %v, want 404", err)
		}
		var oErr *openai.Error
		if _, err := oc.Batches.Get(ctx, ob.ID); !errors.As(err, &oErr) || oErr.StatusCode != 404 {
			t.Errorf("OpenAI batch after Reset: %v, want 404", err)
		}
		if _, err := oc.Files.Get(ctx, f.ID); !errors.As(err, &oErr) || oErr.StatusCode != 404 {
			t.Errorf("file after Reset: %v, want 404", err)
		}
		if l, err := ac.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(l.Data) != 0 {
			t.Errorf("Anthropic batches after Reset: %v %+v, want none", err, l)
		}
		if l, err := oc.Batches.List(ctx, openai.BatchListParams{}); err != nil || len(l.Data) != 0 {
			t.Errorf("OpenAI batches after Reset: %v %+v, want none", err, l)
		}
		if l, err := oc.Files.List(ctx, openai.FileListParams{}); err != nil || len(l.Data) != 0 {
			t.Errorf("files after Reset: %v %+v, want none", err, l)
		}

		// The queue is empty: three requests fit again, and they start
		// after the startup minute, not behind the forgotten five (which
		// would end this batch at 1m + 8 s instead of 1m + 3 s).
		start := time.Now()
		nb, err := ac.Messages.Batches.New(ctx, three)
		if err != nil {
			t.Fatalf("a batch after Reset: %v", err)
		}
		time.Sleep(time.Minute + 3*time.Second)
		nb, err = ac.Messages.Batches.Get(ctx, nb.ID, anthropic.MessageBatchGetParams{})
		if err != nil || nb.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || nb.RequestCounts.Succeeded != 3 {
			t.Fatalf("at 1m3s after Reset: %v %s %+v, want ended with 3 succeeded", err, nb.ProcessingStatus, nb.RequestCounts)
		}
		if got := nb.EndedAt.Sub(start); got != time.Minute+3*time.Second {
			t.Errorf("ended %v after its creation, want 1m3s", got)
		}
	})
}

// TestBatchNotFoundEnvelope: OpenAI's 404 for a file or batch that does
// not exist is an invalid_request_error with code null (wire.APIError's
// NullCode), not the unknown_url of a path the API does not have.
func TestBatchNotFoundEnvelope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, "api_keys: ["+sdkKey+"]\n")
		oc := h.openai(ooption.WithMaxRetries(0))
		ctx := context.Background()
		var oErr *openai.Error
		if _, err := oc.Files.Get(ctx, "file-nope"); !errors.As(err, &oErr) || oErr.StatusCode != 404 ||
			oErr.Code != "" || oErr.Param != "id" || oErr.Type != "invalid_request_error" || oErr.Message != "No such File object: file-nope" {
			t.Errorf("missing file: %v (code %q param %q type %q), want 404 with code null and param id", err, oErr.Code, oErr.Param, oErr.Type)
		}
		if _, err := oc.Batches.Get(ctx, "batch_nope"); !errors.As(err, &oErr) || oErr.StatusCode != 404 || oErr.Code != "" {
			t.Errorf("missing batch: %v (code %q), want 404 with code null", err, oErr.Code)
		}
		if err := oc.Get(ctx, "/assistants", nil, nil); !errors.As(err, &oErr) || oErr.StatusCode != 404 || oErr.Code != "unknown_url" {
			t.Errorf("unknown path: %v, want 404 unknown_url", err)
		}
	})
}
