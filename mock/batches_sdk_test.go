package mock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ratelab/ratelab/mock"
)

// The official SDKs' batch methods against the mock's batch APIs, in
// virtual time (synctest): a batch's hours of processing and its 24-hour
// expiry pass in the time the test's sleeps take, exactly.

func anthropicBatchRequest(id string, maxTokens int64, tools bool) anthropic.MessageBatchNewParamsRequest {
	p := anthropic.MessageBatchNewParamsRequestParams{
		Model:     sdkModel,
		MaxTokens: maxTokens,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("ticket " + id))},
	}
	if tools {
		p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "classify",
			InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"label": map[string]any{"type": "string", "enum": []string{"bug", "question"}}},
				Required:   []string{"label"},
			},
		}}}
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: "classify"}}
	}
	return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: p}
}

func TestSDKAnthropicBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, `
api_keys: [`+sdkKey+`]
batches: {drain_rate: 1, startup: 1m}
`)
		c := h.anthropic()
		ctx := context.Background()
		start := time.Now()
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
			anthropicBatchRequest("plain", 20, false),
			anthropicBatchRequest("tool", 200, true),
			anthropicBatchRequest("bad", 0, false), // max_tokens 0: errored, invalid_request_error
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.ID, "msgbatch_") || b.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress || b.RequestCounts.Processing != 3 {
			t.Fatalf("created: %+v", b)
		}
		if got := b.ExpiresAt.Sub(b.CreatedAt); got != 24*time.Hour {
			t.Errorf("expires_at - created_at = %v, want 24h", got)
		}
		early := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		var apiErr *anthropic.Error
		if early.Next() || !errors.As(early.Err(), &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
			t.Fatalf("results before the end: %v, want 400", early.Err())
		}

		// 1 minute of startup, then one request a second: ended at 63 s.
		time.Sleep(62 * time.Second)
		if b, _ = c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); b.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress {
			t.Fatalf("at 62s: %s, want in_progress", b.ProcessingStatus)
		}
		time.Sleep(time.Second)
		b, err = c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		rc := b.RequestCounts
		if b.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || rc.Succeeded != 2 || rc.Errored != 1 || rc.Processing != 0 {
			t.Fatalf("at 63s: %s %+v", b.ProcessingStatus, rc)
		}
		if got := b.EndedAt.Sub(start); got != 63*time.Second {
			t.Errorf("ended_at after %v, want 63s", got)
		}
		if !strings.HasSuffix(b.ResultsURL, "/v1/messages/batches/"+b.ID+"/results") {
			t.Errorf("results_url %q", b.ResultsURL)
		}
		got := map[string]anthropic.MessageBatchIndividualResponse{}
		st := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		for st.Next() {
			r := st.Current()
			got[r.CustomID] = r
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if p := got["plain"].Result; p.Type != "succeeded" || p.Message.Usage.OutputTokens != 20 || p.Message.StopReason != anthropic.StopReasonMaxTokens || p.Message.Model != sdkModel {
			t.Errorf("plain: %+v", p)
		}
		tool := got["tool"].Result.Message
		if len(tool.Content) != 1 || tool.Content[0].Type != "tool_use" || tool.Content[0].Name != "classify" || tool.StopReason != anthropic.StopReasonToolUse {
			t.Fatalf("tool: %+v", tool)
		}
		var in struct{ Label string }
		if err := json.Unmarshal(tool.Content[0].Input, &in); err != nil || (in.Label != "bug" && in.Label != "question") {
			t.Errorf("tool input %s: %v", tool.Content[0].Input, err)
		}
		bad := got["bad"].Result
		if bad.Type != "errored" || bad.Error.Error.Type != "invalid_request_error" || !strings.Contains(bad.Error.Error.Message, "max_tokens") {
			t.Errorf("bad: %+v", bad)
		}

		// Cancel: the requests not processed when it was asked end canceled.
		big := make([]anthropic.MessageBatchNewParamsRequest, 100)
		for i := range big {
			big[i] = anthropicBatchRequest(fmt.Sprintf("c%d", i), 5, false)
		}
		cb, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: big})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(70 * time.Second) // 10 processed
		cb, err = c.Messages.Batches.Cancel(ctx, cb.ID, anthropic.MessageBatchCancelParams{})
		if err != nil || cb.ProcessingStatus != anthropic.MessageBatchProcessingStatusCanceling || cb.CancelInitiatedAt.IsZero() {
			t.Fatalf("cancel: %v %+v", err, cb)
		}
		if _, err := c.Messages.Batches.Delete(ctx, cb.ID, anthropic.MessageBatchDeleteParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Errorf("delete while canceling: %v, want 400", err)
		}
		time.Sleep(mock.DefaultBatchCancelDelay)
		cb, _ = c.Messages.Batches.Get(ctx, cb.ID, anthropic.MessageBatchGetParams{})
		if cb.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || cb.RequestCounts.Succeeded != 10 || cb.RequestCounts.Canceled != 90 {
			t.Fatalf("after cancel: %s %+v", cb.ProcessingStatus, cb.RequestCounts)
		}

		// List, newest first, two a page: the SDK's auto-pager walks
		// after_id.
		var ids []string
		pager := c.Messages.Batches.ListAutoPaging(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1)})
		for pager.Next() {
			ids = append(ids, pager.Current().ID)
		}
		if pager.Err() != nil || len(ids) != 2 || ids[0] != cb.ID || ids[1] != b.ID {
			t.Errorf("list: %v %v, want [%s %s]", ids, pager.Err(), cb.ID, b.ID)
		}
		del, err := c.Messages.Batches.Delete(ctx, cb.ID, anthropic.MessageBatchDeleteParams{})
		if err != nil || del.ID != cb.ID || del.Type != "message_batch_deleted" {
			t.Fatalf("delete: %v %+v", err, del)
		}
		if _, err := c.Messages.Batches.Get(ctx, cb.ID, anthropic.MessageBatchGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("get after delete: %v, want 404", err)
		}
	})
}

// TestSDKAnthropicBatchExpiry runs a batch the queue cannot finish in 24
// hours: what is not processed by expires_at ends expired.
func TestSDKAnthropicBatchExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One request every 1,000 s after 30 s: 86 of 100 in 24 hours.
		h := startMock(t, `
batches: {drain_rate: 0.001, startup: 30s, anthropic: {queue_requests: 150}}
`)
		c := h.anthropic(aoption.WithMaxRetries(0))
		ctx := context.Background()
		reqs := make([]anthropic.MessageBatchNewParamsRequest, 100)
		for i := range reqs {
			reqs[i] = anthropicBatchRequest(fmt.Sprintf("e%d", i), 5, false)
		}
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: reqs})
		if err != nil {
			t.Fatal(err)
		}
		// The queue holds 100 of 150: 60 more are refused with the time
		// until 10 have been processed (30 s + 10 × 1,000 s).
		_, err = c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: reqs[:60]})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || !strings.Contains(apiErr.Error(), "processing queue") {
			t.Fatalf("over the queue: %v, want 429", err)
		}
		if ra := apiErr.Response.Header.Get("Retry-After"); ra != "10030" {
			t.Errorf("retry-after %q, want 10030", ra)
		}
		time.Sleep(24 * time.Hour)
		b, err = c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if b.ProcessingStatus != "ended" || b.RequestCounts.Succeeded != 86 || b.RequestCounts.Expired != 14 || !b.EndedAt.Equal(b.ExpiresAt) {
			t.Fatalf("after 24h: %s %+v ended %v expires %v", b.ProcessingStatus, b.RequestCounts, b.EndedAt, b.ExpiresAt)
		}
		expired := 0
		st := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		for st.Next() {
			if st.Current().Result.Type == "expired" {
				expired++
			}
		}
		if st.Err() != nil || expired != 14 {
			t.Errorf("expired results: %d (%v), want 14", expired, st.Err())
		}
	})
}

func openaiBatchLines(n int, model string, maxTokens int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"r%d","method":"POST","url":"/v1/chat/completions","body":{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"ticket %d"}]}}`+"\n", i, model, maxTokens, i)
	}
	return b.Bytes()
}

func TestSDKOpenAIBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, `
api_keys: [`+sdkKey+`]
batches: {drain_rate: 1, startup: 1m, openai: {enqueued_tokens: {gpt-4o-mini*: 1000}}}
`)
		c := h.openai()
		ctx := context.Background()
		data := openaiBatchLines(3, sdkOpenAIModel, 16)
		data = append(data, `{"custom_id":"bad","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","max_tokens":0,"messages":[{"role":"user","content":"x"}]}}`+"\n"...)
		f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader(data), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		if err != nil {
			t.Fatal(err)
		}
		if f.Bytes != int64(len(data)) || f.Purpose != "batch" || f.Filename != "in.jsonl" {
			t.Fatalf("file: %+v", f)
		}
		b, err := c.Batches.New(ctx, openai.BatchNewParams{
			InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
			Metadata:         shared.Metadata{"job": "tickets"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != openai.BatchStatusValidating || b.Metadata["job"] != "tickets" || b.RequestCounts.Total != 4 {
			t.Fatalf("created: %+v", b)
		}
		time.Sleep(62 * time.Second) // 2 of 4 processed
		b, _ = c.Batches.Get(ctx, b.ID)
		if b.Status != openai.BatchStatusInProgress || b.RequestCounts.Completed != 2 || b.InProgressAt == 0 {
			t.Fatalf("at 62s: %s %+v", b.Status, b.RequestCounts)
		}
		time.Sleep(2 * time.Second)
		if b, _ = c.Batches.Get(ctx, b.ID); b.Status != openai.BatchStatusFinalizing {
			t.Fatalf("at 64s: %s, want finalizing", b.Status)
		}
		time.Sleep(mock.DefaultBatchFinalize)
		b, err = c.Batches.Get(ctx, b.ID)
		if err != nil || b.Status != openai.BatchStatusCompleted || b.RequestCounts.Completed != 3 || b.RequestCounts.Failed != 1 {
			t.Fatalf("at 74s: %v %s %+v", err, b.Status, b.RequestCounts)
		}
		if b.Usage.OutputTokens != 3*16 || b.Usage.InputTokens == 0 || b.CompletedAt-b.CreatedAt != 74 {
			t.Errorf("usage %+v, completed after %d s", b.Usage, b.CompletedAt-b.CreatedAt)
		}
		out := fileLines(t, c, b.OutputFileID)
		if len(out) != 3 {
			t.Fatalf("output file: %d lines, want 3", len(out))
		}
		for _, l := range out {
			var line struct {
				CustomID string `json:"custom_id"`
				Response struct {
					StatusCode int                   `json:"status_code"`
					Body       openai.ChatCompletion `json:"body"`
				} `json:"response"`
			}
			if err := json.Unmarshal(l, &line); err != nil {
				t.Fatal(err)
			}
			if line.Response.StatusCode != 200 || line.Response.Body.Usage.CompletionTokens != 16 || line.Response.Body.Choices[0].Message.Content == "" {
				t.Errorf("%s: %s", line.CustomID, l)
			}
		}
		errs := fileLines(t, c, b.ErrorFileID)
		if len(errs) != 1 || !bytes.Contains(errs[0], []byte(`"custom_id":"bad","response":{"status_code":400`)) {
			t.Errorf("error file: %s", errs)
		}

		// The enqueued-token limit: a batch of 1,000 tokens is refused at
		// validation while another holds the pool.
		big := openaiBatchLines(300, sdkOpenAIModel, 5)
		f2, _ := c.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader(big), "big.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
		first, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f2.ID, Endpoint: "/v1/chat/completions", CompletionWindow: "24h"})
		if err != nil {
			t.Fatal(err)
		}
		second, _ := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f2.ID, Endpoint: "/v1/chat/completions", CompletionWindow: "24h"})
		time.Sleep(time.Minute)
		second, _ = c.Batches.Get(ctx, second.ID)
		if second.Status != openai.BatchStatusFailed || len(second.Errors.Data) != 1 || second.Errors.Data[0].Code != "token_limit_exceeded" ||
			!strings.HasPrefix(second.Errors.Data[0].Message, "Enqueued token limit reached for gpt-4o-mini") {
			t.Fatalf("second: %s %+v", second.Status, second.Errors)
		}
		// Cancel the first: cancelling, then cancelled, its processed
		// requests in the output file and the rest in the error file.
		time.Sleep(10 * time.Second)
		first, err = c.Batches.Cancel(ctx, first.ID)
		if err != nil || first.Status != openai.BatchStatusCancelling {
			t.Fatalf("cancel: %v %s", err, first.Status)
		}
		time.Sleep(mock.DefaultBatchCancelDelay)
		first, _ = c.Batches.Get(ctx, first.ID)
		if first.Status != openai.BatchStatusCancelled || len(fileLines(t, c, first.OutputFileID)) != 10 || len(fileLines(t, c, first.ErrorFileID)) != 290 {
			t.Fatalf("cancelled: %s %+v", first.Status, first.RequestCounts)
		}
		var ids []string
		pager := c.Batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: openai.Int(2)})
		for pager.Next() {
			ids = append(ids, pager.Current().ID)
		}
		if pager.Err() != nil || len(ids) != 3 || ids[0] != second.ID || ids[2] != b.ID {
			t.Errorf("list: %v %v", ids, pager.Err())
		}
		if d, err := c.Files.Delete(ctx, f.ID); err != nil || !d.Deleted {
			t.Errorf("delete file: %v %+v", err, d)
		}
		var apiErr *openai.Error
		if _, err := c.Files.Get(ctx, f.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("get deleted file: %v, want 404", err)
		}
	})
}

// TestSDKOpenAIBatchInvalidFile: an input file's problems fail the batch
// at validation, each with its line.
func TestSDKOpenAIBatchInvalidFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, `{}`)
		c := h.openai()
		ctx := context.Background()
		data := "{not json\n" +
			`{"custom_id":"a","method":"POST","url":"/v1/responses","body":{"model":"gpt-4o-mini","input":"x"}}` + "\n" +
			`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}}` + "\n" +
			`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}}` + "\n" +
			`{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}}` + "\n"
		f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(data), "in.jsonl", "application/jsonl"), Purpose: "batch"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: "/v1/chat/completions", CompletionWindow: "24h"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(mock.DefaultBatchStartup)
		b, _ = c.Batches.Get(ctx, b.ID)
		var got []string
		for _, e := range b.Errors.Data {
			got = append(got, fmt.Sprintf("%d:%s", e.Line, e.Code))
		}
		want := "1:invalid_json_line 2:mismatched_endpoint 4:duplicate_custom_id 5:model_mismatch"
		if b.Status != openai.BatchStatusFailed || strings.Join(got, " ") != want {
			t.Errorf("%s %v, want failed %s", b.Status, got, want)
		}
		if _, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: "file-nope", Endpoint: "/v1/chat/completions", CompletionWindow: "24h"}); err == nil {
			t.Error("an unknown input file was accepted")
		}
	})
}

func fileLines(t *testing.T, c openai.Client, id string) [][]byte {
	t.Helper()
	if id == "" {
		t.Fatal("no file id")
	}
	resp, err := c.Files.Content(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out [][]byte
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}
