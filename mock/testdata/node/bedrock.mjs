// The AWS SDK for JavaScript v3 (@aws-sdk/client-bedrock-runtime) and the
// AI SDK's Bedrock provider (@ai-sdk/amazon-bedrock), unchanged, against
// mockllm's Bedrock Runtime (driven by mock/bedrock_node_test.go's
// TestNodeBedrock). BEDROCK_BASE_URL is a mock with no faults; the throttle
// checks use BEDROCK_THROTTLE_URL (a mock whose first attempt of each call
// is a ThrottlingException, by amz-sdk-request) and BEDROCK_RPM_URL (rpm 1,
// so a second call is throttled on every attempt). Each check prints one
// line; any failure exits non-zero.
import assert from "node:assert/strict";
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  ModelNotReadyException,
  ThrottlingException,
} from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { createAmazonBedrock } from "@ai-sdk/amazon-bedrock";
import { generateText, streamText, generateObject, tool, stepCountIs } from "ai";
import { z } from "zod";

const MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const credentials = { accessKeyId: "AKIDNODETEST", secretAccessKey: "not-checked" };
// The client's default handler is HTTP/2 (NodeHttp2Handler, for
// InvokeModelWithBidirectionalStream); mockllm serves HTTP/1.1 on plain
// TCP, so the client is given the SDK's HTTP/1.1 handler, the documented
// requestHandler option. Nothing else is configured.
const client = (endpoint) => new BedrockRuntimeClient({ region: "us-east-1", endpoint, credentials, requestHandler: new NodeHttpHandler() });
const user = (text) => [{ role: "user", content: [{ text }] }];
const filler = (n) => process.env["FILLER_" + n];

const weather = {
  type: "object",
  additionalProperties: false,
  required: ["city", "unit"],
  properties: { city: { type: "string", minLength: 1 }, unit: { enum: ["c", "f"] } },
};

async function awsSDK() {
  const c = client(process.env.BEDROCK_BASE_URL);
  const out = await c.send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 12 } }));
  assert.equal(out.output.message.content[0].text, filler(12));
  assert.equal(out.stopReason, "max_tokens");
  assert.equal(out.usage.outputTokens, 12);
  assert.ok(out.usage.inputTokens > 0 && out.metrics.latencyMs >= 0);
  console.log("aws-sdk converse: ok");

  const st = await c.send(new ConverseStreamCommand({ modelId: "us.anthropic.claude-haiku-4-5-20251001-v1:0", messages: user("Hello"), inferenceConfig: { maxTokens: 12 } }));
  let text = "", stop, usage;
  for await (const ev of st.stream) {
    if (ev.contentBlockDelta) text += ev.contentBlockDelta.delta.text;
    if (ev.messageStop) stop = ev.messageStop.stopReason;
    if (ev.metadata) usage = ev.metadata.usage;
  }
  assert.equal(text, filler(12));
  assert.equal(stop, "max_tokens");
  assert.equal(usage.outputTokens, 12);
  console.log("aws-sdk converse-stream: ok");

  const tc = await c.send(new ConverseCommand({
    modelId: MODEL, messages: user("Weather in Paris?"), inferenceConfig: { maxTokens: 400 },
    toolConfig: { tools: [{ toolSpec: { name: "get_weather", inputSchema: { json: weather } } }], toolChoice: { tool: { name: "get_weather" } } },
  }));
  const tu = tc.output.message.content[0].toolUse;
  assert.equal(tc.stopReason, "tool_use");
  assert.equal(tu.name, "get_weather");
  assert.ok(typeof tu.input.city === "string" && tu.input.city.length > 0 && ["c", "f"].includes(tu.input.unit), JSON.stringify(tu.input));
  console.log("aws-sdk tool call: ok", JSON.stringify(tu.input));

  const so = await c.send(new ConverseCommand({
    modelId: MODEL, messages: user("Weather in Paris?"), inferenceConfig: { maxTokens: 400 },
    outputConfig: { textFormat: { type: "json_schema", structure: { jsonSchema: { schema: JSON.stringify(weather), name: "weather" } } } },
  }));
  const doc = JSON.parse(so.output.message.content[0].text);
  assert.ok(typeof doc.city === "string" && ["c", "f"].includes(doc.unit), JSON.stringify(doc));
  console.log("aws-sdk structured output: ok");

  const inv = await c.send(new InvokeModelCommand({
    modelId: MODEL, contentType: "application/json",
    body: JSON.stringify({ anthropic_version: "bedrock-2023-05-31", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] }),
  }));
  const msg = JSON.parse(new TextDecoder().decode(inv.body));
  assert.equal(msg.content[0].text, filler(5));
  console.log("aws-sdk invoke-model: ok");

  // A ThrottlingException on the first attempt: the standard retryer
  // (3 attempts) retries it and the call succeeds.
  const th = client(process.env.BEDROCK_THROTTLE_URL);
  const ok = await th.send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 3 } }));
  assert.equal(ok.$metadata.attempts, 2);
  console.log("aws-sdk throttle retried: ok, attempts", ok.$metadata.attempts);

  // rpm 1: the second call is throttled on each of its 3 attempts.
  const rpm = client(process.env.BEDROCK_RPM_URL);
  await rpm.send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 3 } }));
  try {
    await rpm.send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 3 } }));
    assert.fail("the second call under rpm 1 succeeded");
  } catch (e) {
    assert.ok(e instanceof ThrottlingException, String(e));
    assert.equal(e.$metadata.httpStatusCode, 429);
    assert.equal(e.$metadata.attempts, 3);
    console.log("aws-sdk throttle exhausted: ok, attempts", e.$metadata.attempts);
  }

  // ModelNotReadyException (the mock's script: 2 attempts of 529): the
  // model marks it @retryable, so the JavaScript SDK retries it.
  const nr = client(process.env.BEDROCK_NOT_READY_URL);
  const r = await nr.send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 3 } }));
  assert.equal(r.$metadata.attempts, 3);
  console.log("aws-sdk model-not-ready retried: ok, attempts", r.$metadata.attempts);
  void ModelNotReadyException;

  // BEDROCK_SIGNED_URL knows this key's secret and verifies the signature.
  const signed = (secret) => new BedrockRuntimeClient({ region: "us-east-1", endpoint: process.env.BEDROCK_SIGNED_URL,
    credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: secret }, requestHandler: new NodeHttpHandler() });
  await signed("js-secret").send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 3 } }));
  try {
    await signed("wrong").send(new ConverseCommand({ modelId: MODEL, messages: user("Hello"), inferenceConfig: { maxTokens: 3 } }));
    assert.fail("a wrong secret was accepted");
  } catch (e) {
    assert.equal(e.name, "InvalidSignatureException", String(e));
    assert.equal(e.$metadata.httpStatusCode, 403);
    console.log("aws-sdk sigv4 verified: ok");
  }
}

async function aiSDK() {
  const bedrock = createAmazonBedrock({ region: "us-east-1", baseURL: process.env.BEDROCK_BASE_URL, ...credentials });
  const model = bedrock(MODEL);
  const g = await generateText({ model, prompt: "Hello", maxOutputTokens: 12 });
  assert.equal(g.text, filler(12));
  assert.equal(g.usage.outputTokens, 12);
  assert.equal(g.finishReason, "length");
  console.log("ai-sdk generateText: ok");

  const s = streamText({ model, prompt: "Hello", maxOutputTokens: 12 });
  let text = "";
  for await (const d of s.textStream) text += d;
  assert.equal(text, filler(12));
  assert.equal((await s.usage).outputTokens, 12);
  console.log("ai-sdk streamText: ok");

  const t = await generateText({
    model, prompt: "Weather in Paris?", maxOutputTokens: 400, toolChoice: { type: "tool", toolName: "get_weather" },
    tools: { get_weather: tool({ inputSchema: z.object({ city: z.string().min(1), unit: z.enum(["c", "f"]) }), execute: async ({ city }) => `sunny in ${city}` }) },
    stopWhen: stepCountIs(1),
  });
  assert.equal(t.toolCalls.length, 1);
  assert.equal(t.toolCalls[0].toolName, "get_weather");
  assert.ok(["c", "f"].includes(t.toolCalls[0].input.unit));
  assert.equal(t.toolResults[0].output, `sunny in ${t.toolCalls[0].input.city}`);
  console.log("ai-sdk tool call: ok", JSON.stringify(t.toolCalls[0].input));

  const o = await generateObject({ model, prompt: "Weather in Paris?", maxOutputTokens: 400, schema: z.object({ city: z.string().min(1), unit: z.enum(["c", "f"]) }) });
  assert.ok(typeof o.object.city === "string" && ["c", "f"].includes(o.object.unit), JSON.stringify(o.object));
  console.log("ai-sdk generateObject: ok");

  // The AI SDK signs with its own SigV4 implementation: verified too.
  const signedModel = createAmazonBedrock({ region: "us-east-1", baseURL: process.env.BEDROCK_SIGNED_URL, accessKeyId: credentials.accessKeyId, secretAccessKey: "js-secret" })(MODEL);
  const sg = await generateText({ model: signedModel, prompt: "Hello", maxOutputTokens: 3 });
  assert.equal(sg.usage.outputTokens, 3);
  const ss = streamText({ model: signedModel, prompt: "Hello", maxOutputTokens: 3 });
  for await (const _ of ss.textStream) void _;
  assert.equal((await ss.usage).outputTokens, 3);
  console.log("ai-sdk sigv4 verified: ok");

  // rpm 1 (a fresh mock): the AI SDK's own retry (maxRetries 2, 2 s then
  // 4 s; Bedrock sends no retry-after) gives up after 3 attempts.
  const rpm = createAmazonBedrock({ region: "us-east-1", baseURL: process.env.BEDROCK_AI_RPM_URL, ...credentials })(MODEL);
  await generateText({ model: rpm, prompt: "Hello", maxOutputTokens: 3 });
  const start = Date.now();
  try {
    await generateText({ model: rpm, prompt: "Hello", maxOutputTokens: 3 });
    assert.fail("the second call under rpm 1 succeeded");
  } catch (e) {
    assert.equal(e.name, "AI_RetryError", String(e));
    assert.equal(e.errors.length, 3);
    assert.equal(e.lastError.statusCode, 429);
    const waited = Date.now() - start;
    assert.ok(waited >= 6000, `waited ${waited} ms, want at least 6 s (2 s + 4 s)`);
    console.log("ai-sdk throttle exhausted: ok, attempts", e.errors.length, "waited ms >=", 6000);
  }
}

await awsSDK();
await aiSDK();
console.log("bedrock: all checks passed");
