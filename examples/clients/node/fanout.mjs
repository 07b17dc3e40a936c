// The guide's fan-outs (bounded-fanout-guide.txt) with the official
// Anthropic SDK for Node, unchanged: it reads ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY, which loadgen sets to its mock, and retries as it
// always does (2 retries by default, honouring retry-after).
//
//   node fanout.mjs --concurrency 0    unbounded: Promise.all over every item
//   node fanout.mjs --concurrency 20   a pool of 20 workers
//   node fanout.mjs --max-retries 10   the SDK's maxRetries
//
// Items come from RATELAB_ITEMS_FILE (one JSON object a line: id, prompt or
// messages, system, max_tokens). Prints "completed C of N"; exits 1 if any
// item failed.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '0' },
    'max-retries': { type: 'string', default: '2' },
  },
});
const concurrency = Number(values.concurrency);
const client = new Anthropic({ maxRetries: Number(values['max-retries']) });
const model = process.env.RATELAB_MODEL ?? 'claude-haiku-4-5';
const items = readFileSync(process.env.RATELAB_ITEMS_FILE, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line));

// One item: an error is recorded with the item, not thrown, so one failure
// does not abandon the batch (the guide's step 3).
async function one(item) {
  try {
    const msg = await client.messages.create({
      model,
      max_tokens: item.max_tokens ?? 100,
      ...(item.system ? { system: item.system } : {}),
      messages: item.messages ?? [{ role: 'user', content: item.prompt }],
    });
    return { id: item.id, text: msg.content[0].text };
  } catch (err) {
    if (err instanceof Anthropic.APIError) {
      return { id: item.id, error: `${err.status}: ${err.message}` };
    }
    throw err;
  }
}

let results;
if (concurrency > 0) {
  // A bounded pool: N workers taking the next item as each finishes.
  results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await one(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
} else {
  results = await Promise.all(items.map(one));
}
const failed = results.filter((r) => r.error).length;
console.log(`completed ${items.length - failed} of ${items.length}`);
process.exitCode = failed ? 1 : 0;
