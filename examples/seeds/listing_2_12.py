"""semaphore-listing.txt, Listing 2.12: one semaphore per provider (OpenAI 30,
Anthropic 10), around Listing 2.9's LiteLLM call.

The listing's mapping and get_provider, as written, with Listing 2.9's
call_llm taking the model. Changed, and why:
  - each item's prompt and provider are read from RATELAB_ITEMS_FILE (one
    JSON object a line: "prompt", "metadata": {"provider", "model"});
    an Anthropic item's model gets LiteLLM's "anthropic/" prefix, which
    get_provider reads. LiteLLM reads the base URLs and keys from
    OPENAI_BASE_URL / OPENAI_API_KEY and ANTHROPIC_BASE_URL /
    ANTHROPIC_API_KEY itself;
  - max_tokens is the item's (LiteLLM would otherwise ask Anthropic for
    its default of 4,096 output tokens, 20 s a call at the mock's 5 ms);
  - the top-level `await` runs in asyncio.run(main()), which counts the
    results.
Prints "completed C of N"; exits 1 if any call failed.
"""

import asyncio
import json
import os
import sys

from litellm import acompletion

PROVIDER_SEMAPHORES = {
    "openai": asyncio.Semaphore(30),
    "anthropic": asyncio.Semaphore(10),
}


def get_provider(model: str) -> str:
    """Extract provider name from model string."""
    return "anthropic" if model.startswith("anthropic/") else "openai"


async def call_llm(model: str, prompt: str, max_tokens: int) -> str:
    """LLM call with per-provider rate limiting and automatic retry."""
    async with PROVIDER_SEMAPHORES[get_provider(model)]:
        response = await acompletion(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            num_retries=3,  # Automatic retry with exponential backoff
        )
    return response.choices[0].message.content


def model_of(item: dict) -> str:
    meta = item.get("metadata") or {}
    model = meta.get("model", "gpt-5.4-mini")
    return "anthropic/" + model if meta.get("provider") == "anthropic" else model


async def main() -> int:
    with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
        items = [json.loads(line) for line in f if line.strip()]
    tasks = [call_llm(model_of(it), it["prompt"], it.get("max_tokens", 100)) for it in items]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    for r in failed[:3]:
        print(f"failed: {type(r).__name__}: {str(r)[:200]}", file=sys.stderr)
    print(f"completed {len(items) - len(failed)} of {len(items)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
