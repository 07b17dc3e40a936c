// Azure OpenAI's JavaScript clients, unchanged, against the mock: openai's
// AzureOpenAI and the AI SDK's @ai-sdk/azure, each with plain, streamed,
// tool call, structured output and a 429 it retries. mock/azure_clients_test.go
// serves the mock (MOCK_URL; MOCK_FILTER_URL refuses every prompt) and
// checks the "ok NAME" lines; any failure exits non-zero.
import { AzureOpenAI } from "openai";
import { createAzure } from "@ai-sdk/azure";
import { generateText, streamText, Output, tool } from "ai";
import { z } from "zod";

const URL_ = process.env.MOCK_URL;
const KEY = "sk-ratelab-test";

// Every attempt the clients made, through their fetch option.
const seen = [];
const recording = async (input, init) => {
  const at = performance.now();
  const res = await fetch(input, init);
  seen.push({ url: String(input), status: res.status, headers: Object.fromEntries(res.headers), at, key: new Headers(init?.headers).get("api-key") });
  return res;
};

let failed = 0;
async function check(name, fn) {
  try {
    const detail = await fn();
    console.log("ok " + name, detail ?? "");
  } catch (e) {
    failed++;
    console.log("FAIL", name, "-", e?.stack ?? e);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
// check429 asserts the attempts: a 429 with Azure's headers, then the
// retry, sent no sooner than retry-after-ms said.
function check429() {
  const st = seen.map((a) => a.status);
  assert(JSON.stringify(st) === "[200,429,200]", `statuses ${st}`);
  const h = seen[1].headers;
  const ms = Number(h["retry-after-ms"]);
  assert(ms > 0 && ms <= 1001 && h["retry-after"] === "1" && h["x-ratelimit-remaining-requests"] === "0", JSON.stringify(h));
  const gap = seen[2].at - seen[1].at;
  assert(gap >= ms - 1, `retried after ${gap} ms, before retry-after-ms ${ms}`);
  return `after retry-after-ms ${ms}`;
}

const msgs = [{ role: "user", content: "Hello" }];
const weatherParams = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };

// openai's AzureOpenAI: deployment URLs from the model, api-version, api-key.
const client = new AzureOpenAI({ endpoint: URL_, apiKey: KEY, apiVersion: "2024-10-21", fetch: recording });
await check("openai plain", async () => {
  seen.length = 0;
  const c = await client.chat.completions.create({ model: "chat-prod", messages: msgs });
  assert(seen[0].url === URL_ + "/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21" && seen[0].key === KEY, JSON.stringify(seen[0]));
  assert(c.model === "gpt-4o" && c.choices[0].message.content, JSON.stringify(c));
  assert(c.prompt_filter_results[0].prompt_index === 0 && c.choices[0].content_filter_results.hate.severity === "safe", "no content filter fields");
  return c.usage.completion_tokens;
});
await check("openai stream", async () => {
  const stream = await client.chat.completions.create({ model: "mini", messages: msgs, stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  assert(chunks[0].choices.length === 0 && chunks[0].prompt_filter_results, JSON.stringify(chunks[0]));
  const text = chunks.map((ch) => ch.choices[0]?.delta?.content ?? "").join("");
  assert(text.length > 0 && chunks.at(-1).usage.completion_tokens === 12, JSON.stringify(chunks.at(-1)));
  return chunks.length;
});
await check("openai tools", async () => {
  const c = await client.chat.completions.create({ model: "mini", messages: msgs, tool_choice: "required",
    tools: [{ type: "function", function: { name: "get_weather", parameters: weatherParams } }] });
  const call = c.choices[0].message.tool_calls[0];
  assert(c.choices[0].finish_reason === "tool_calls" && call.function.name === "get_weather" && typeof JSON.parse(call.function.arguments).city === "string", JSON.stringify(c));
  return call.function.name;
});
await check("openai structured", async () => {
  const c = await client.chat.completions.create({ model: "mini", messages: msgs, response_format: { type: "json_schema",
    json_schema: { name: "out", strict: true, schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false } } } });
  assert(Number.isInteger(JSON.parse(c.choices[0].message.content).n), c.choices[0].message.content);
});
await check("openai 429", async () => {
  seen.length = 0;
  await client.chat.completions.create({ model: "limited", messages: msgs });
  await client.chat.completions.create({ model: "limited", messages: msgs });
  return check429();
});
await check("openai content_filter", async () => {
  const f = new AzureOpenAI({ endpoint: process.env.MOCK_FILTER_URL, apiKey: KEY, apiVersion: "2024-10-21", fetch: recording });
  seen.length = 0;
  try {
    await f.chat.completions.create({ model: "mini", messages: msgs });
  } catch (e) {
    assert(e.status === 400 && e.code === "content_filter" && e.error.innererror.code === "ResponsibleAIPolicyViolation", JSON.stringify(e.error));
    assert(seen.length === 1, `${seen.length} attempts, want 1`);
    return e.code;
  }
  throw new Error("no 400");
});

// @ai-sdk/azure: the default model is the Responses API on the v1 path;
// .chat() with useDeploymentBasedUrls the deployment path.
const v1 = createAzure({ baseURL: URL_ + "/openai/v1", apiKey: KEY, fetch: recording });
const dep = createAzure({ baseURL: URL_ + "/openai", apiKey: KEY, apiVersion: "2024-10-21", useDeploymentBasedUrls: true, fetch: recording });
const models = { "ai-sdk responses": v1("chat-prod"), "ai-sdk chat": dep.chat("chat-prod") };
const paths = { "ai-sdk responses": "/openai/v1/responses", "ai-sdk chat": "/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21" };
for (const [name, model] of Object.entries(models)) {
  await check(`${name} plain`, async () => {
    seen.length = 0;
    const r = await generateText({ model, prompt: "Say hello.", maxOutputTokens: 64, maxRetries: 0 });
    assert(seen[0].url === URL_ + paths[name] && seen[0].key === KEY, JSON.stringify(seen[0]));
    assert(r.text.length > 0 && r.usage.outputTokens === 12, `text ${r.text}, usage ${JSON.stringify(r.usage)}`);
    return r.usage.outputTokens;
  });
  await check(`${name} stream`, async () => {
    const r = streamText({ model, prompt: "Say hello.", maxOutputTokens: 64, maxRetries: 0 });
    let text = "";
    for await (const d of r.textStream) text += d;
    assert(text.length > 0 && (await r.usage).outputTokens === 12, `text ${text}`);
  });
  await check(`${name} tools`, async () => {
    const r = await generateText({ model, prompt: "Weather in Paris?", maxRetries: 0, toolChoice: "required",
      tools: { get_weather: tool({ description: "Get the weather", inputSchema: z.object({ city: z.string() }) }) } });
    assert(r.toolCalls.length === 1 && r.toolCalls[0].toolName === "get_weather" && typeof r.toolCalls[0].input.city === "string", JSON.stringify(r.toolCalls));
  });
  await check(`${name} structured`, async () => {
    const r = await generateText({ model, prompt: "Extract.", maxRetries: 0, output: Output.object({ schema: z.object({ n: z.number().int(), name: z.string() }) }) });
    assert(Number.isInteger(r.output.n) && typeof r.output.name === "string", JSON.stringify(r.output));
  });
}
await check("ai-sdk 429", async () => {
  seen.length = 0;
  const model = dep.chat("limited-ai"); // its own limit: the openai check just spent limited's
  await generateText({ model, prompt: "Hi", maxOutputTokens: 8 });
  await generateText({ model, prompt: "Hi", maxOutputTokens: 8 });
  return check429();
});
process.exit(failed ? 1 : 0);
