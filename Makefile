# earshot: the two commands of the quick start are `make run` and `make test`.
# Every target installs what it needs on first use and says what it is doing.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# Build outputs live outside the checkout by default, so that a fresh clone reuses earlier builds.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/earshot/target
# Public conformance data shared by every test, beside the checkout.
export EARSHOT_TESTDATA ?= $(abspath $(ROOT)/../shared/testdata)
CARGO ?= cargo
EARSHOT := $(CARGO_TARGET_DIR)/release/earshot

.PHONY: help run run-aws test test-rust test-e2e test-web test-cdk synth conformance test-kokoro kokoro-venv bench build deps-rust kokoro-local clean

help:
	@echo "make run           the local stack: Kokoro (CPU), scripted agent, demo page on http://127.0.0.1:$${PORT:-8787}"
	@echo "make run-aws       the production path locally: AWS SDK clients against stand-ins for SageMaker, Polly, Bedrock"
	@echo "make test          run every test that can run on this machine"
	@echo "make bench         run the benchmarks and print their figures"
	@echo "make build         build the release binaries"
	@echo "make kokoro-local  start the Kokoro container's server locally (onnx engine, CPU)"

deps-rust:
	@command -v $(CARGO) >/dev/null || { echo "earshot: cargo is missing; install Rust (rustup) first"; exit 1; }
	@echo "==> fetching Rust crates (cargo fetch --locked)"
	@$(CARGO) fetch --locked --quiet

run: build kokoro-venv
	@EARSHOT_BIN=$(EARSHOT) $(ROOT)/scripts/run-local.sh

run-aws: build kokoro-venv
	@echo "==> building the AWS stand-ins"
	$(CARGO) build --release --locked -p earshot-standins
	@PATH_MODE=aws EARSHOT_BIN=$(EARSHOT) STANDINS_BIN=$(CARGO_TARGET_DIR)/release/earshot-standins $(ROOT)/scripts/run-local.sh

test: test-rust conformance test-kokoro test-e2e test-web test-cdk
	@echo "==> all tests passed"

test-rust: deps-rust
	@echo "==> Rust tests (cargo test --workspace); build outputs in $(CARGO_TARGET_DIR)"
	$(CARGO) test --workspace --locked --exclude earshot-e2e
	@echo "==> the segmenter benchmark on a tiny input, to keep it working"
	$(CARGO) run --quiet --locked -p earshot -- bench segmenter --sizes-mb 0.05 --passes 1

conformance: deps-rust
	@echo "==> sentence-boundary conformance scores (data: $(EARSHOT_TESTDATA)/sbd)"
	$(CARGO) test --quiet --locked -p earshot-core --test conformance -- --nocapture

test-kokoro:
	@echo "==> Kokoro container tests (real model, onnx engine)"
	$(MAKE) --no-print-directory -C infra/kokoro test

test-e2e: deps-rust kokoro-venv
	@echo "==> end-to-end tests: the local stack against the real Kokoro container (one test at a time)"
	$(CARGO) test --locked -p earshot-e2e -- --test-threads=1

kokoro-venv:
	@$(MAKE) --no-print-directory -C infra/kokoro venv

test-web: build kokoro-venv
	@echo "==> web client tests: the parser under node, the demo page in headless Chromium"
	EARSHOT_BIN=$(EARSHOT) $(ROOT)/scripts/test-web.sh

build: deps-rust
	@echo "==> building release binaries"
	$(CARGO) build --release --locked -p earshot

bench: build
	@echo "==> segmenter throughput"
	$(EARSHOT) bench segmenter

test-cdk:
	@echo "==> CDK app: assertions on the synthesized templates (offline, no credentials, no Docker)"
	$(MAKE) --no-print-directory -C infra/cdk deps test

synth:
	$(MAKE) --no-print-directory -C infra/cdk deps synth

kokoro-local:
	$(MAKE) --no-print-directory -C infra/kokoro serve

clean:
	$(CARGO) clean
	$(MAKE) --no-print-directory -C infra/kokoro clean
