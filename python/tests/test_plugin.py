"""The plugin as users meet it: a pytest run of its own (pytester, in a
subprocess), whose outcome and output are checked."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_mockllm import BinaryNotFound, find_binary

BIN = os.environ.get("MOCKLLM_BIN")

pytestmark = pytest.mark.skipif(not BIN, reason="set MOCKLLM_BIN to a built mockllm (the Go test TestPlugin does)")


def alive(pid: int) -> bool:
    """Whether pid is a running (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


PIDFILE_TEST = """
import anthropic, os

def ask(mockllm):
    with anthropic.Anthropic(base_url=mockllm.url, api_key="k", max_retries=2) as c:
        c.messages.create(model="claude-sonnet-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
"""


def test_failing_assertion_is_reported_clearly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        PIDFILE_TEST
        + """
def test_no_429s(mockllm):
    mockllm.set_faults(script=[{"attempts": 2, "status": 429, "retry_after": "1s"}])
    ask(mockllm)
    assert mockllm.stats().throttled == 0
"""
    )
    result = pytester.runpytest_subprocess("--mockllm-bin", BIN, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # pytest's own assertion rewriting shows the count and where it came from.
    result.stdout.fnmatch_lines(["*assert 2 == 0*", "*where 2 = Stats(*throttled=2*).throttled*"])
    assert "throttled_by={'script': 2}" in out


def test_missing_binary(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_one(mockllm):\n    pass\n\ndef test_two(mockllm):\n    pass\n")
    empty = pytester.mkdir("emptybin")
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MOCKLLM_BIN", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*mockllm binary not found (looked on PATH and at *bin/mockllm)*make build*--mockllm-bin PATH*"])
    # A clear message, not a traceback into the plugin.
    assert "_server.py" not in result.stdout.str()


def test_named_binary_missing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one(mockllm):\n    pass\n")
    result = pytester.runpytest_subprocess("--mockllm-bin", "/nonexistent/mockllm", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*mockllm binary '/nonexistent/mockllm' (from --mockllm-bin*): no such file*"])


def test_find_binary_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    (tmp_path / "bin").mkdir()
    local = tmp_path / "bin" / "mockllm"
    local.write_text("#!/bin/sh\n")
    local.chmod(0o644)
    with pytest.raises(BinaryNotFound, match="not found"):
        find_binary(None, str(tmp_path))
    local.chmod(0o755)
    assert find_binary(None, str(tmp_path)) == str(local)
    with pytest.raises(BinaryNotFound, match="not executable"):
        noexec = tmp_path / "noexec"
        noexec.write_text("")
        find_binary(str(noexec))


def test_port_taken(pytester: pytest.Pytester) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        pytester.makepyfile("def test_one(mockllm):\n    pass\n")
        result = pytester.runpytest_subprocess("--mockllm-bin", BIN, "--mockllm-addr", f"127.0.0.1:{port}", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*mockllm could not listen on 127.0.0.1:{port}: the port is taken (address already in use)*"])


def test_bad_mockllm_argument(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one(mockllm):\n    pass\n")
    result = pytester.runpytest_subprocess("--mockllm-bin", BIN, "--mockllm-arg=--rpm=lots", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*mockllm exited with status 1 before listening*", "*mockllm's stderr:*", "*rpm*"])


def test_no_process_left_after_failure_and_interrupt(pytester: pytest.Pytester) -> None:
    pidfile = pytester.path / "pids"
    pytester.makepyfile(
        f"""
def test_fails(mockllm):
    open({str(pidfile)!r}, "a").write(str(mockllm.pid) + "\\n")
    assert False, "boom"

def test_interrupted(mockllm):
    open({str(pidfile)!r}, "a").write(str(mockllm.pid) + "\\n")
    raise KeyboardInterrupt
"""
    )
    result = pytester.runpytest_subprocess("--mockllm-bin", BIN, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    pids = {int(p) for p in pidfile.read_text().split()}
    assert len(pids) == 1, "one server for the session"
    (pid,) = pids
    assert not alive(pid), f"mockllm pid {pid} outlived its pytest run"


def test_no_process_left_when_pytest_is_killed(pytester: pytest.Pytester) -> None:
    pidfile = pytester.path / "pid"
    pytester.makepyfile(
        f"""
import time
def test_hangs(mockllm):
    open({str(pidfile)!r}, "w").write(str(mockllm.pid))
    time.sleep(60)
"""
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--mockllm-bin", BIN, "-p", "no:cacheprovider", "-q"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()):
            assert proc.poll() is None, "pytest ended before its test started"
            assert time.monotonic() < deadline, "the test never started"
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        assert alive(pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert wait_gone(pid), f"mockllm pid {pid} outlived a SIGKILLed pytest"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_one_server_per_xdist_worker(pytester: pytest.Pytester) -> None:
    out = pytester.path / "seen"
    pytester.makepyfile(
        f"""
import os
def test_a(mockllm):
    open({str(out)!r}, "a").write(f"{{os.environ['PYTEST_XDIST_WORKER']}} {{mockllm.url}} {{mockllm.pid}}\\n")
    assert mockllm.stats().calls == 0

def test_b(mockllm):
    test_a(mockllm)
"""
    )
    result = pytester.runpytest_subprocess("--mockllm-bin", BIN, "-p", "no:cacheprovider", "-n", "2", "--dist", "each")
    result.assert_outcomes(passed=4)
    rows = [line.split() for line in out.read_text().splitlines()]
    by_worker: dict[str, set[tuple[str, str]]] = {}
    for worker, url, pid in rows:
        by_worker.setdefault(worker, set()).add((url, pid))
    assert sorted(by_worker) == ["gw0", "gw1"]
    # One server per worker, shared by its tests, and not by the other worker.
    assert all(len(s) == 1 for s in by_worker.values()), by_worker
    (a,), (b,) = by_worker.values()
    assert a[0] != b[0] and a[1] != b[1]
    for _, pid in (a, b):
        assert not alive(int(pid))


def test_ini_options(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\nmockllm_bin = {BIN}\nmockllm_args = --rpm 7 --max-concurrent 4\n")
    pytester.makepyfile(
        """
def test_limits(mockllm):
    assert mockllm.limits()["rpm"] == 7
    assert mockllm.limits()["max_concurrent"] == 4
    mockllm.set_limits(rpm=1)

def test_started_settings_come_back(mockllm):
    assert mockllm.limits()["rpm"] == 7
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def python_blocks(markdown: Path) -> list[str]:
    """The ```python blocks of a Markdown file."""
    blocks, cur = [], None
    for line in markdown.read_text().splitlines():
        if cur is None and line.strip() == "```python":
            cur = []
        elif cur is not None and line.strip() == "```":
            blocks.append("\n".join(cur) + "\n")
            cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


@pytest.mark.parametrize("doc", ["README.md", "python/README.md"])
def test_readme_example_passes(pytester: pytest.Pytester, doc: str) -> None:
    """The five-line example that README.md and python/README.md show runs
    as written and passes."""
    root = Path(__file__).resolve().parents[2]
    examples = [b for b in python_blocks(root / doc) if "def test_my_client_never_gets_throttled" in b]
    assert len(examples) == 1, f"{doc} should show the example once, found {len(examples)}"
    pytester.makepyfile(examples[0])
    result = pytester.runpytest_subprocess("--mockllm-bin", BIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
