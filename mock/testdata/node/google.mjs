// Google's JavaScript clients, unchanged, against the mock: @google/genai
// on both backends (the Gemini API with an API key; Vertex AI, vertexai:
// true, with a bearer token from google-auth-library's OAuth2Client) and the
// AI SDK's @ai-sdk/google (generateText, streamText, a forced tool,
// Output.object), then a 429 each: genai makes one attempt unless
// httpOptions.retryOptions asks for more; the AI SDK retries twice
// (maxRetries 2) on its own backoff, Google sending no retry-after.
// mock/gemini_node_test.go starts two mocks and runs this with
// GEMINI_BASE_URL (the mock's URL), VERTEX_BASE_URL (the same mock, for the
// Vertex AI backend) and GEMINI_LIMITED_URL (one whose key allows one
// request a minute, already spent by nothing). Any failure exits non-zero
// with the check that failed.
import { GoogleGenAI, Type } from "@google/genai";
import { OAuth2Client } from "google-auth-library";
import { generateText, streamText, Output, tool } from "ai";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { z } from "zod";

const base = process.env.GEMINI_BASE_URL;
const vertexBase = process.env.VERTEX_BASE_URL;
const limited = process.env.GEMINI_LIMITED_URL;
const key = "sk-test";
const model = "gemini-2.5-flash";

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

const weatherSchema = {
  type: Type.OBJECT,
  required: ["city", "days"],
  properties: { city: { type: Type.STRING }, days: { type: Type.INTEGER, minimum: 1, maximum: 7 } },
};

// genaiChecks runs the checks of one genai client: generateContent, the
// stream, a forced function call, a response schema.
async function genaiChecks(ai, label) {
  let plain = "";
  await check(`genai${label} generateContent`, async () => {
    const r = await ai.models.generateContent({ model, contents: "Say hello.", config: { maxOutputTokens: 64 } });
    plain = r.text;
    assert(plain.length > 0, "empty text");
    assert(r.candidates[0].finishReason === "STOP", `finishReason ${r.candidates[0].finishReason}`);
    assert(r.usageMetadata.candidatesTokenCount > 0 && r.usageMetadata.promptTokenCount > 0, `usage ${JSON.stringify(r.usageMetadata)}`);
  });
  await check(`genai${label} generateContentStream`, async () => {
    let text = "", chunks = 0, last;
    for await (const c of await ai.models.generateContentStream({ model, contents: "Say hello.", config: { maxOutputTokens: 64 } })) {
      text += c.text ?? "";
      chunks++;
      last = c;
    }
    assert(text === plain, `streamed ${JSON.stringify(text)}, want ${JSON.stringify(plain)}`);
    assert(chunks > 1 && last.candidates[0].finishReason === "STOP", `${chunks} chunks, last ${JSON.stringify(last)}`);
  });
  await check(`genai${label} function call`, async () => {
    const r = await ai.models.generateContent({
      model, contents: "Weather in Paris?",
      config: {
        tools: [{ functionDeclarations: [{ name: "get_weather", parameters: weatherSchema }] }],
        toolConfig: { functionCallingConfig: { mode: "ANY" } },
      },
    });
    const calls = r.functionCalls;
    assert(calls?.length === 1 && calls[0].name === "get_weather", `calls ${JSON.stringify(calls)}`);
    const a = calls[0].args;
    assert(typeof a.city === "string" && Number.isInteger(a.days) && a.days >= 1 && a.days <= 7, `args ${JSON.stringify(a)}`);
  });
  await check(`genai${label} responseSchema`, async () => {
    const r = await ai.models.generateContent({
      model, contents: "Weather as JSON",
      config: { responseMimeType: "application/json", responseSchema: weatherSchema, maxOutputTokens: 1024 },
    });
    const a = JSON.parse(r.text);
    assert(typeof a.city === "string" && Number.isInteger(a.days), `document ${r.text}`);
  });
}

await genaiChecks(new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base } }), "");
// Vertex AI: the base URL override, and an OAuth2Client holding an access
// token (a fake one, the mock's key) as the authClient of google-auth-library
// in place of Application Default Credentials, so no Google auth is asked.
const token = new OAuth2Client();
token.setCredentials({ access_token: key, expiry_date: Date.now() + 3600_000 });
await genaiChecks(new GoogleGenAI({
  vertexai: true, project: "my-project", location: "us-central1",
  googleAuthOptions: { authClient: token },
  httpOptions: { baseUrl: vertexBase },
}), " vertex");

const google = createGoogleGenerativeAI({ baseURL: base + "/v1beta", apiKey: key });
const invoice = z.object({
  vendor: z.string(),
  total: z.number().min(0).max(10000),
  currency: z.enum(["EUR", "USD"]),
  lines: z.array(z.object({ sku: z.string(), qty: z.number().int().min(1) })).min(1).max(3),
  paid: z.boolean(),
});
// No bounds on days: @ai-sdk/google 3.0.x leaves minimum and maximum out
// of the parameters it sends (its OpenAPI conversion keeps type, enum and
// required), so neither Gemini nor the mock is told them.
const weather = tool({
  description: "Get the weather",
  inputSchema: z.object({ city: z.string(), days: z.number().int(), unit: z.enum(["c", "f"]) }),
});
await check("ai-sdk google generateText", async () => {
  const r = await generateText({ model: google(model), prompt: "Say hello.", maxOutputTokens: 64, maxRetries: 0 });
  assert(r.text.length > 0 && r.finishReason === "stop", `text ${r.text}, finishReason ${r.finishReason}`);
  assert(r.usage.outputTokens > 0, `usage ${JSON.stringify(r.usage)}`);
});
await check("ai-sdk google streamText", async () => {
  const r = streamText({ model: google(model), prompt: "Say hello.", maxOutputTokens: 64, maxRetries: 0 });
  let text = "";
  for await (const part of r.textStream) text += part;
  assert(text.length > 0 && (await r.finishReason) === "stop", `text ${text}, finishReason ${await r.finishReason}`);
});
for (const stream of [false, true]) {
  await check(`ai-sdk google forced tool${stream ? " (streamed)" : ""}`, async () => {
    const opts = { model: google(model), prompt: "Weather in Paris?", tools: { weather }, toolChoice: "required", maxRetries: 0 };
    const r = stream ? streamText(opts) : await generateText(opts);
    const calls = await r.toolCalls;
    assert(calls.length === 1 && calls[0].toolName === "weather", `tool calls ${JSON.stringify(calls)}`);
    weather.inputSchema.parse(calls[0].input);
  });
}
await check("ai-sdk google Output.object", async () => {
  const r = await generateText({ model: google(model), prompt: "Extract the invoice.", output: Output.object({ schema: invoice }), maxRetries: 0 });
  invoice.parse(r.output);
});

// The 429s, against the limited mock (rpm 1): one success, then genai
// without retries (1 attempt), genai with retryOptions {attempts: 3}
// (3 attempts), the AI SDK with its default maxRetries 2 (3 attempts).
const lim = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: limited } });
await check("genai 429, not retried", async () => {
  await lim.models.generateContent({ model, contents: "hi" });
  try {
    await lim.models.generateContent({ model, contents: "hi" });
    throw new Error("no error");
  } catch (e) {
    assert(e.status === 429 && /RESOURCE_EXHAUSTED/.test(e.message) && /RetryInfo/.test(e.message), `error ${e.status} ${e.message}`);
  }
});
await check("genai 429, retryOptions attempts 3", async () => {
  const r = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: limited, retryOptions: { attempts: 3, initialDelay: 0.05, jitter: 0 } } });
  try {
    await r.models.generateContent({ model, contents: "hi" });
    throw new Error("no error");
  } catch (e) {
    assert(e.status === 429, `error ${e.status} ${e.message}`);
  }
});
await check("ai-sdk google 429, default retries", async () => {
  const g = createGoogleGenerativeAI({ baseURL: limited + "/v1beta", apiKey: key });
  try {
    await generateText({ model: g(model), prompt: "hi" });
    throw new Error("no error");
  } catch (e) {
    assert(/RetryError|429|quota/i.test(`${e.name} ${e.message}`), `error ${e.name} ${e.message}`);
  }
});

if (failed > 0) {
  console.log(`${failed} check(s) failed`);
  process.exit(1);
}
