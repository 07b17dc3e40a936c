// Package python holds the Go tests that run ratelab's Python side in make
// test: the pytest plugin's own tests (python/tests) and the Python SDKs'
// generated API tests against mockllm (sdktests_test.go). The Python code
// itself is the pytest-mockllm package beside this file.
package python
