"""The pytest plugin (entry point pytest11: mockllm).

Fixtures:

- ``mockllm`` (function scope): the session's server, with its settings
  put back to how it started and its counters zeroed before the test, then
  the settings of the test's ``@pytest.mark.mockllm(...)`` applied.
- ``mockllm_server`` (session scope): the server itself, started on first
  use, stopped at the end of the session (one per pytest-xdist worker).
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from ._server import SETTINGS, BinaryNotFound, MockLLM, StartError, find_binary


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockllm", "mockllm server (pytest-mockllm)")
    group.addoption(
        "--mockllm-bin",
        metavar="PATH",
        help="the mockllm binary (default: $MOCKLLM_BIN, the mockllm_bin ini key, mockllm on PATH, then ROOTDIR/bin/mockllm)",
    )
    group.addoption(
        "--mockllm-addr",
        metavar="HOST:PORT",
        help="address mockllm listens on (default 127.0.0.1:0: a free port per session / xdist worker)",
    )
    group.addoption("--mockllm-config", metavar="FILE", help="mockllm YAML config file (--config)")
    group.addoption(
        "--mockllm-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for mockllm (repeatable), e.g. --mockllm-arg=--rpm=50",
    )
    parser.addini("mockllm_bin", "the mockllm binary (as --mockllm-bin)")
    parser.addini("mockllm_addr", "address mockllm listens on (as --mockllm-addr)")
    parser.addini("mockllm_config", "mockllm YAML config file (as --mockllm-config; relative to the rootdir)")
    parser.addini("mockllm_args", "more arguments for mockllm", type="args", default=[])
    parser.addini("mockllm_startup_timeout", "seconds to wait for mockllm's 'listening on' line (default 10)", default="10")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mockllm(limits=None, latency=None, faults=None, quota=None, limits_by_model=None): "
        "mockllm settings for this test, applied through the admin API before it runs",
    )


def _server_options(config: pytest.Config) -> dict:
    rootdir = str(config.rootpath)
    binary = config.getoption("mockllm_bin") or os.environ.get("MOCKLLM_BIN") or config.getini("mockllm_bin") or None
    cfg = config.getoption("mockllm_config") or config.getini("mockllm_config") or None
    if cfg and not os.path.isabs(cfg) and not config.getoption("mockllm_config"):
        cfg = os.path.join(rootdir, cfg)
    try:
        timeout = float(config.getini("mockllm_startup_timeout"))
    except ValueError:
        raise pytest.UsageError(f"mockllm_startup_timeout: want seconds, got {config.getini('mockllm_startup_timeout')!r}") from None
    return dict(
        binary=binary,
        rootdir=rootdir,
        addr=config.getoption("mockllm_addr") or config.getini("mockllm_addr") or "127.0.0.1:0",
        config=cfg,
        args=list(config.getini("mockllm_args")) + list(config.getoption("mockllm_arg")),
        startup_timeout=timeout,
    )


@pytest.fixture(scope="session")
def mockllm_server(request: pytest.FixtureRequest) -> Iterator[MockLLM]:
    """The session's mockllm process (one per pytest-xdist worker)."""
    o = _server_options(request.config)
    try:
        binary = find_binary(o["binary"], o["rootdir"])
        server = MockLLM(
            binary,
            addr=o["addr"],
            config=o["config"],
            args=o["args"],
            startup_timeout=o["startup_timeout"],
        )
    except (BinaryNotFound, StartError) as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mockllm(mockllm_server: MockLLM, request: pytest.FixtureRequest) -> Iterator[MockLLM]:
    """mockllm, with the settings it started with and zeroed counters, plus
    the test's @pytest.mark.mockllm(...) settings."""
    mockllm_server.restore()
    marker = request.node.get_closest_marker("mockllm")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.mockllm takes keywords ({', '.join(SETTINGS)}), not positional arguments")
        mockllm_server.configure(marker.kwargs)
    yield mockllm_server
