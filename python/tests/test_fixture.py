"""The mockllm fixture against the real anthropic SDK (and raw HTTP where a
client must misbehave on purpose)."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request

import anthropic
import pytest

from pytest_mockllm import AdminError, MockLLM, Stats


def ask(mockllm: MockLLM, text: str = "hello", **kw) -> anthropic.types.Message:
    with anthropic.Anthropic(base_url=mockllm.url, api_key="test-key", **kw) as client:
        return client.messages.create(model="claude-sonnet-5", max_tokens=16, messages=[{"role": "user", "content": text}])


def test_anthropic_sdk_call_is_counted(mockllm: MockLLM) -> None:
    msg = ask(mockllm)
    assert msg.role == "assistant" and msg.content
    s = mockllm.stats()
    assert isinstance(s, Stats)
    assert (s.calls, s.completed, s.attempts, s.throttled, s.early_retries) == (1, 1, 1, 0, 0)
    assert s.throttled_by_attempt == [] and s.max_attempts == 1
    assert s.input_tokens > 0 and s.output_tokens > 0


def test_counts_start_at_zero_in_every_test(mockllm: MockLLM) -> None:
    # The test above made a call on the same session server.
    assert mockllm.stats().calls == 0


def test_scripted_429s_by_attempt(mockllm: MockLLM) -> None:
    mockllm.set_faults(script=[{"attempts": 2, "status": 429, "retry_after": "1s"}])
    ask(mockllm, max_retries=2)
    s = mockllm.stats()
    assert (s.calls, s.completed, s.attempts) == (1, 1, 3)
    assert s.throttled == 2 and s.throttled_by == {"script": 2}
    assert s.throttled_by_attempt == [1, 1]
    assert s.throttled_on_attempt(1) == 1 and s.throttled_on_attempt(3) == 0
    assert s.max_attempts == 3
    # The SDK waited the retry-after it was given.
    assert s.early_retries == 0


def test_early_retry_is_counted(mockllm: MockLLM) -> None:
    # A client that ignores retry-after: retries at once.
    mockllm.set_faults(script=[{"attempts": 1, "status": 429, "retry_after": "30s"}])
    body = json.dumps({"model": "claude-sonnet-5", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}).encode()
    statuses = []
    for retry in (0, 1):
        req = urllib.request.Request(
            mockllm.url + "/v1/messages",
            data=body,
            headers={
                "content-type": "application/json",
                "x-api-key": "k",
                "anthropic-version": "2023-06-01",
                "x-stainless-retry-count": str(retry),
            },
        )
        try:
            with urllib.request.urlopen(req) as r:
                statuses.append(r.status)
        except urllib.error.HTTPError as e:
            statuses.append(e.code)
    assert statuses == [429, 200]
    s = mockllm.stats()
    assert (s.calls, s.attempts, s.early_retries) == (1, 2, 1)


def test_max_concurrent_and_peak_concurrency(mockllm: MockLLM) -> None:
    mockllm.set_limits(max_concurrent=2)
    mockllm.set_latency(ttft="1s")
    results: list[object] = []

    def one(i: int) -> None:
        try:
            results.append(ask(mockllm, f"item {i}", max_retries=0))
        except anthropic.RateLimitError as e:
            results.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = mockllm.stats()
    assert s.calls == 3 and s.attempts == 3
    assert s.throttled == 1 and s.throttled_by == {"max_concurrent": 1}
    assert s.completed == 2 and s.failed == 1
    # The refused attempt was in flight too, for the moment it took to refuse.
    assert s.peak_concurrency in (2, 3)
    assert sum(isinstance(r, anthropic.RateLimitError) for r in results) == 1


async def test_async_gather(mockllm: MockLLM) -> None:
    mockllm.set_latency(ttft="200ms")
    async with anthropic.AsyncAnthropic(base_url=mockllm.url, api_key="k") as client:
        await asyncio.gather(
            *(client.messages.create(model="claude-sonnet-5", max_tokens=8, messages=[{"role": "user", "content": f"n {i}"}]) for i in range(5))
        )
    s = mockllm.stats()
    assert (s.calls, s.completed, s.throttled) == (5, 5, 0)
    assert s.peak_concurrency == 5


@pytest.mark.mockllm(limits={"max_concurrent": 3, "rpm": 100}, latency={"ttft": "5ms"})
def test_marker_applies_settings(mockllm: MockLLM) -> None:
    assert mockllm.limits()["max_concurrent"] == 3
    assert mockllm.limits()["rpm"] == 100
    assert mockllm.latency()["ttft"] == "5ms"


def test_settings_are_restored(mockllm: MockLLM, mockllm_server: MockLLM) -> None:
    # Earlier tests changed limits, latency and faults.
    assert mockllm is mockllm_server
    assert mockllm.limits()["max_concurrent"] == 0 and mockllm.limits()["rpm"] == 0
    assert mockllm.latency()["ttft"] == "0s"
    assert not mockllm.faults().get("script")


def test_restore_removes_added_model_pools(mockllm: MockLLM) -> None:
    mockllm.set_limits_by_model({"claude-haiku-*": {"rpm": 5}})
    assert "claude-haiku-*" in mockllm.limits_by_model()
    mockllm.restore()
    assert not mockllm.limits_by_model()


def test_bad_setting_is_a_clear_error(mockllm: MockLLM) -> None:
    with pytest.raises(AdminError, match="bogus"):
        mockllm.set_limits(bogus=1)
    with pytest.raises(AdminError, match="unknown mockllm setting"):
        mockllm.configure({"limit": {}})


def test_env_points_sdks_here(mockllm: MockLLM) -> None:
    env = mockllm.env()
    assert env["ANTHROPIC_BASE_URL"] == mockllm.url
    assert env["OPENAI_BASE_URL"] == mockllm.url + "/v1"
    assert mockllm.url.startswith("http://127.0.0.1:")
