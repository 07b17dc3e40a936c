GO ?= go
PKGS := ./...

.PHONY: all build test unit lint vet bench bench-mock bench-loadgen bench-inflight bench-large run fmt clean node-deps py-deps dist dist-check image

all: build test

build:
	$(GO) build $(PKGS)
	$(GO) build -o bin/mockllm ./cmd/mockllm
	$(GO) build -o bin/loadgen ./cmd/loadgen

## test: every test, with the race detector (what CI runs). gotestsum prints
## go test's usual lines, then a summary that lists every skipped test with
## its reason.
test: lint node-deps py-deps
	$(GO) tool gotestsum --format standard-quiet -- -race -count=1 -timeout 20m $(PKGS)

## node-deps: the JavaScript clients the tests run (the AI SDK, LangChain JS,
## the Anthropic SDK), installed from their package-lock.json with npm ci
## whenever the install is missing, partial or older than the lock file
## (judged by node_modules/.package-lock.json, which npm writes last). Needs npm.
NODE_DIRS := mock/testdata/node mock/testdata/node-ai7 examples/clients/node
node-deps:
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: the JavaScript client tests need node and npm"; exit 1; }; \
	for d in $(NODE_DIRS); do \
		m=$$d/node_modules/.package-lock.json; \
		if [ ! -f $$m ] || [ $$d/package-lock.json -nt $$m ]; then \
			echo "npm ci in $$d"; (cd $$d && npm ci --no-audit --no-fund) || exit 1; \
			touch $$m; \
		fi; \
	done

## py-deps: the Python clients the tests run (the anthropic and openai SDKs,
## LiteLLM, pytest), in a project-local venv, .venv/, from
## python/requirements.lock, plus the pytest plugin python/ (pytest-mockllm,
## installed editable, so the venv runs the checkout's code), plus the sdists
## of the pinned anthropic and openai SDKs in .venv/sdists/ (their generated
## API tests, which python/sdktests_test.go runs against mockllm). Made or
## brought up to date whenever the venv is missing or older than the lock or
## python/pyproject.toml (judged by .venv/.installed, written last). Needs
## python3 (3.10 or newer) with its venv module; never touches the system
## Python's packages.
PYTHON ?= python3
VENV := .venv
py-deps:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found: the Python client tests need Python 3.10 or newer"; exit 1; }; \
	m=$(VENV)/.installed; \
	if [ ! -f $$m ] || [ python/requirements.lock -nt $$m ] || [ python/pyproject.toml -nt $$m ]; then \
		echo "creating $(VENV) from python/requirements.lock"; \
		[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV) || exit 1; \
		pip="$(VENV)/bin/python -m pip -q --disable-pip-version-check"; \
		$$pip install -r python/requirements.lock || exit 1; \
		$$pip install --no-deps -e ./python || exit 1; \
		sdists=$$(grep -E '^(anthropic|openai)==' python/requirements.lock); \
		rm -rf $(VENV)/sdists; \
		$$pip download --no-binary :all: --no-deps -d $(VENV)/sdists $$sdists || exit 1; \
		touch $$m; \
	fi

## unit: the tests without the race detector (faster while editing).
unit:
	$(GO) test -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

## lint: gofmt, go.mod tidy, go vet and staticcheck (a tool dependency in
## go.mod, so nothing to install).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: the performance benchmarks whose figures docs/performance.md records. Each
## reports a ratio against a baseline measured in the same run (this kind of
## machine is noisy: compare only same-sitting ratios).
bench:
	$(GO) test -run '^$$' -bench 'JSONThroughput' -benchtime 10x ./mock/
	$(GO) test -run '^$$' -bench 'CallAccounting' -benchtime 10x ./mock/
	$(GO) test -run '^$$' -bench 'CallLogAttempt' -benchtime 200000x ./mock/
	$(GO) test -run '^$$' -bench 'CommandPythonSemaphore' -benchtime 3x ./internal/loadgen/
	$(GO) test -run '^$$' -bench 'StreamPacing' -benchtime 3x ./mock/
	$(GO) test -run '^$$' -bench 'ParkedStreamMemory' -benchtime 1x ./mock/
	$(GO) test -run '^$$' -bench 'ToolCall' -benchtime 1x -count 3 ./mock/
	$(GO) test -run '^$$' -bench 'Generate20' -benchmem ./mock/schemagen/
	$(GO) test -run '^$$' -bench 'Overhead' -benchtime 60x ./engine/
	$(GO) test -run '^$$' -bench 'Run100k' -benchtime 3x ./engine/
	$(GO) test -run '^$$' -bench . -benchmem ./strategies/ ./provider/
	$(MAKE) bench-mock
	$(MAKE) bench-loadgen
	$(MAKE) bench-inflight

## bench-mock: mockllm measured cross-process, as users run it (bench/compare
## starts each server as its own process and drives it from another, in
## interleaved rounds, printing every round and the medians with their
## spread): JSON throughput and server CPU per request against a bare
## net/http server replaying mockllm's own response (64 connections), and
## 1,000 streams at 20 ms/token against a reference absolute-deadline pacer.
BENCH_ROUNDS ?= 20
bench-mock:
	$(GO) build -o bin/mockllm ./cmd/mockllm
	$(GO) build -o bin/ ./bench/bareserver ./bench/refpacer ./bench/compare
	./bin/compare json -rounds $(BENCH_ROUNDS) -round 1s -conns 64 \
		-server 'bare=bin/bareserver --response @RESPONSE@' \
		-server 'mockllm=bin/mockllm --config bench/mock-json.yaml --addr 127.0.0.1:0'
	./bin/compare stream -rounds $(BENCH_ROUNDS) -streams 1000 -tokens 20 -per-token 20ms \
		-server 'ref=bin/refpacer --tokens 20 --per-token 20ms' \
		-server 'mockllm=bin/mockllm --config bench/mock-stream.yaml --addr 127.0.0.1:0'

## bench-loadgen: loadgen run measured end to end, as users run it, against
## vegeta attack and a bare Go client loop (bench/clients runs each as its
## own process, afresh every run, in interleaved rounds): the same zero-latency
## server (bench/bareserver), the same request, 32 workers, 100,000 calls.
LOADGEN_ROUNDS ?= 4
LOADGEN_CALLS ?= 100000
bench-loadgen:
	$(GO) build -o bin/loadgen ./cmd/loadgen
	$(GO) build -o bin/ ./bench/bareserver ./bench/clientloop ./bench/clients
	$(GO) build -o bin/vegeta github.com/tsenart/vegeta/v12
	./bin/clients -server bin/bareserver -rounds $(LOADGEN_ROUNDS) -calls $(LOADGEN_CALLS) -workers 32 \
		-client 'bare=bin/clientloop --target @TARGETS@ --workers @WORKERS@ --calls @CALLS@' \
		-client 'vegeta=bin/vegeta attack -lazy -format json -targets @TARGETS@ -rate 0 -workers @WORKERS@ -max-workers @WORKERS@ -output @RESULTS@' \
		-client 'loadgen=bin/loadgen run @SCENARIO@ --format json'

## bench-inflight: memory per in-flight call: peak RSS of bench/inflight.yaml
## (10,000 workers against a limit of 5,000), then the scaled test of it
## (TestMemoryPerInflightCall: 250 and 1,000 workers).
bench-inflight:
	$(GO) build -o bin/loadgen ./cmd/loadgen
	/usr/bin/time -f 'inflight.yaml: peak RSS %M KiB, %e s' ./bin/loadgen run bench/inflight.yaml >/dev/null
	$(GO) test -count=1 -run 'MemoryPerInflightCall' -v ./bench/inflight/ | grep -i rss

## bench-large: peak RSS of scenarios/large.yaml (100,000 calls) and of a
## 1,000,000-line batch's validating and resume passes.
bench-large: build
	/usr/bin/time -f 'large.yaml: peak RSS %M KiB, %e s' ./bin/loadgen run scenarios/large.yaml >/dev/null
	RATELAB_BATCH_RSS_LINES=1000000 $(GO) test -count=1 -run 'BatchPeakRSS' -v ./batch/ | grep -i rss

## run: the main job against the embedded mock.
run:
	$(GO) run ./cmd/loadgen run scenarios/20-concurrent.yaml

## dist: static binaries (CGO_ENABLED=0, -trimpath) of mockllm and loadgen
## for linux and darwin, amd64 and arm64, in dist/ as CMD-OS-ARCH, with
## SHA256SUMS. Reproducible: the same commit and Go version give the same
## bytes (make dist-check builds twice and compares). The VCS revision is
## stamped in (--version) even where GOFLAGS says -buildvcs=false.
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST_FLAGS := -trimpath -buildvcs=auto
SHA256SUM := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo shasum -a 256)

# build-dist builds both commands for each OS/ARCH of $(1) into dist/.
define build-dist
	@mkdir -p dist
	@set -e; for p in $(1); do \
		os=$${p%/*}; arch=$${p#*/}; \
		for cmd in mockllm loadgen; do \
			echo "dist/$$cmd-$$os-$$arch"; \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(DIST_FLAGS) -o dist/$$cmd-$$os-$$arch ./cmd/$$cmd; \
		done; \
	done
endef

dist:
	rm -rf dist
	$(call build-dist,$(DIST_PLATFORMS))
	cd dist && $(SHA256SUM) mockllm-* loadgen-* > SHA256SUMS
	@cat dist/SHA256SUMS

## dist-check: make dist, then make dist again with an empty build cache
## (so every package is compiled again), and compare the SHA256SUMS.
dist-check:
	@set -e; tmp=$$(mktemp -d); trap 'chmod -R u+w $$tmp; rm -rf $$tmp' EXIT; \
	$(MAKE) --no-print-directory dist >/dev/null; cp dist/SHA256SUMS $$tmp/first; \
	GOCACHE=$$tmp/cache $(MAKE) --no-print-directory dist >/dev/null; \
	if diff $$tmp/first dist/SHA256SUMS; then \
		echo "dist-check: the build with an empty cache is identical:"; cat dist/SHA256SUMS; \
	else echo "dist-check: the two builds differ"; exit 1; fi

## image: the OCI image (base scratch; mockllm and loadgen in
## /usr/local/bin; entrypoint mockllm on 0.0.0.0:8080) for linux/amd64 and
## linux/arm64, built without a container daemon by internal/mkimage
## (go-containerregistry): dist/image/oci is an OCI layout with one
## multi-platform index, dist/image/ratelab-linux-ARCH.tar the image for
## `docker load` / `podman load`. Every timestamp is the commit's
## ($$SOURCE_DATE_EPOCH wins), so the digests are reproducible too.
IMAGE_NAME ?= ratelab/mockllm
IMAGE_TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
image:
	$(call build-dist,linux/amd64 linux/arm64)
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
		$(GO) run ./internal/mkimage --dist dist --out dist/image --name $(IMAGE_NAME) --tag $(IMAGE_TAG) \
		--revision "$$(git rev-parse HEAD 2>/dev/null)"

clean:
	rm -rf bin dist $(VENV)
