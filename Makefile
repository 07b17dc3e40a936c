GO ?= go
PKGS := ./...

.PHONY: all build test unit lint vet bench run fmt clean

all: build test

build:
	$(GO) build $(PKGS)
	$(GO) build -o bin/mockllm ./cmd/mockllm
	$(GO) build -o bin/loadgen ./cmd/loadgen

## test: every test, with the race detector (what CI runs).
test: lint vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## unit: the tests without the race detector (faster while editing).
unit:
	$(GO) test -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

## lint: fail when any file is not gofmt-formatted.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: the performance benchmarks whose figures README records.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./mock/ ./engine/ ./strategies/

## run: the main job against the embedded mock.
run:
	$(GO) run ./cmd/loadgen run scenarios/20-concurrent.yaml

clean:
	rm -rf bin
