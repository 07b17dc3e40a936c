// Popular JavaScript clients, unchanged, against the mock: the Vercel AI SDK
// (generateText, streamText, forced tools, Output.object) with its Anthropic
// provider and both OpenAI providers — the default `openai(model)`, which
// calls the Responses API, and `openai.chat(model)` (Chat Completions) —
// and LangChain JS withStructuredOutput for both.
// mock/clients_node_test.go starts the mock and runs this with
// ANTHROPIC_BASE_URL (no /v1) and OPENAI_BASE_URL (with /v1).
// Any failure exits non-zero with the check that failed.
import { generateText, streamText, Output, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { ChatAnthropic } from "@langchain/anthropic";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";

const anthropicBase = process.env.ANTHROPIC_BASE_URL;
const openaiBase = process.env.OPENAI_BASE_URL;
const anthropic = createAnthropic({ baseURL: anthropicBase + "/v1", apiKey: "sk-test" });
const openai = createOpenAI({ baseURL: openaiBase, apiKey: "sk-test" });
const models = {
  anthropic: anthropic("claude-sonnet-4-5"),
  openai: openai.chat("gpt-4o-mini"),
  "openai-responses": openai("gpt-4o-mini"),
};

const invoice = z.object({
  vendor: z.string(),
  total: z.number().min(0).max(10000),
  currency: z.enum(["EUR", "USD"]),
  lines: z.array(z.object({ sku: z.string(), qty: z.number().int().min(1) })).min(1).max(3),
  paid: z.boolean(),
});
const weather = tool({
  description: "Get the weather",
  inputSchema: z.object({ city: z.string(), days: z.number().int().min(1).max(7), unit: z.enum(["c", "f"]) }),
});

let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log("ok  ", name);
  } catch (e) {
    failed++;
    console.log("FAIL", name, "-", e?.message ?? e);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

for (const [provider, model] of Object.entries(models)) {
  await check(`${provider} generateText`, async () => {
    const r = await generateText({ model, prompt: "Say hello.", maxOutputTokens: 64, maxRetries: 0 });
    assert(r.text.length > 0, "empty text");
    assert(r.finishReason === "stop", `finishReason ${r.finishReason}, want stop`);
  });
  await check(`${provider} streamText`, async () => {
    const r = streamText({ model, prompt: "Say hello.", maxOutputTokens: 64, maxRetries: 0 });
    let text = "";
    for await (const part of r.textStream) text += part;
    assert(text.length > 0, "empty stream");
    assert((await r.finishReason) === "stop", `finishReason ${await r.finishReason}, want stop`);
  });
  for (const stream of [false, true]) {
    await check(`${provider} forced tool${stream ? " (streamed)" : ""}`, async () => {
      const opts = { model, prompt: "Weather in Paris?", tools: { weather }, toolChoice: "required", maxRetries: 0 };
      const r = stream ? streamText(opts) : await generateText(opts);
      const calls = await r.toolCalls;
      assert(calls.length === 1 && calls[0].toolName === "weather", `tool calls ${JSON.stringify(calls)}`);
      weather.inputSchema.parse(calls[0].input);
      assert((await r.finishReason) === "tool-calls", `finishReason ${await r.finishReason}`);
    });
  }
  await check(`${provider} Output.object`, async () => {
    const r = await generateText({ model, prompt: "Extract the invoice.", output: Output.object({ schema: invoice }), maxRetries: 0 });
    invoice.parse(r.output);
  });
}

const lc = {
  anthropic: new ChatAnthropic({ model: "claude-sonnet-4-5", apiKey: "sk-test", anthropicApiUrl: anthropicBase, maxRetries: 0 }),
  openai: new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "sk-test", configuration: { baseURL: openaiBase }, maxRetries: 0 }),
};
for (const [provider, model] of Object.entries(lc)) {
  await check(`langchain ${provider} withStructuredOutput`, async () => {
    const out = await model.withStructuredOutput(invoice).invoke("Extract the invoice.");
    invoice.parse(out);
  });
}

if (failed > 0) {
  console.log(`${failed} check(s) failed`);
  process.exit(1);
}
