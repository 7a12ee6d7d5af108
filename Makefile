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
# `make run` and `make run-aws` run the dev build that the tests build too: a gateway that waits on sockets
# gains about a millisecond per sentence from optimisation (BENCHMARKS.md, "Build and test times"), and a
# first run waits two minutes instead of nine. `make run` also leaves the AWS SDK out (cargo feature `aws`).
LOCAL_DIR := $(CARGO_TARGET_DIR)/debug
# Tools the checks install on first use, kept beside the build outputs.
TOOLS := $(HOME)/.cache/earshot/tools
MACHETE := $(TOOLS)/bin/cargo-machete
# cargo-lambda and zig, for the Lambda's bootstrap. Outside the checkout, so that every clone builds with the
# same linker path: cargo's fingerprints of the cross build include it, and a path that changed with the clone
# rebuilt every arm64 dependency (minutes on 2 cores) in each new clone.
export LAMBDA_TOOLS ?= $(TOOLS)/cargo-lambda
# What lambda-tools installs there; its stamp holds them, so that an install cut short (or older pins) is made
# again rather than kept by every later clone.
export LAMBDA_PINS := cargo-lambda==1.9.2 ziglang==0.17.1
# moto's DynamoDB server, for the interrupt store's tests.
MOTO_VENV := $(ROOT)/tests/moto/.venv
export EARSHOT_MOTO_SERVER := $(MOTO_VENV)/bin/moto_server

.PHONY: audio-decoders livekit-venv fastkokoro-venv help run run-aws doctor deploy-credentials deploy-preflight test lint test-lambda-package test-rust test-e2e test-run test-web test-cdk test-deploy test-lambda test-bench synth lambda-tools build-lambda deploy destroy conformance test-kokoro kokoro-venv bench bench-venv peer-venv build deps-rust kokoro-local clean moto-venv

help:
	@echo "make run           the local stack: Kokoro (CPU), scripted agent, demo page on http://127.0.0.1:$${PORT:-8787}"
	@echo "make run-aws       the production path locally: AWS SDK clients against stand-ins for SageMaker, Polly, Bedrock"
	@echo "make test          run every test that can run on this machine"
	@echo "make lint          rustfmt, clippy (warnings as errors), the docs, no package folder compiled into a test, unused dependencies (part of make test)"
	@echo "make bench         run every benchmark (about an hour on 2 cores) and write bench/results/ (report.md, plots)"
	@echo "make build         build the release binaries"
	@echo "make synth         the CloudFormation templates of the CDK app (offline)"
	@echo "make deploy        build the Lambda (arm64) and deploy to your AWS account (see infra/cdk/README.md)"
	@echo "make doctor        after make deploy: does each arm of the deployed gateway speak and its agent answer, and if not, what to fix"
	@echo "make destroy       remove what make deploy created"
	@echo "make kokoro-local  start the Kokoro container's server locally (onnx engine, CPU)"

deps-rust:
	@command -v $(CARGO) >/dev/null || { echo "earshot: cargo is missing; install Rust (rustup) first"; exit 1; }
	@echo "==> fetching Rust crates (cargo fetch --locked)"
	@$(CARGO) fetch --locked --quiet
	@$(ROOT)/scripts/debian-packages.sh cmake:cmake  # libopus is built from source (opusic-sys)

# The Kokoro venv installs (network) while the gateway compiles (CPU): a first run waits for the longer of the two.
run: deps-rust
	@mkdir -p $(ROOT)/.run; echo "==> building earshot for the local stack (dev build, no AWS SDK) while the Kokoro venv installs (log: .run/venv.log)"
	@$(MAKE) --no-print-directory kokoro-venv > $(ROOT)/.run/venv.log 2>&1 & venv=$$!; \
	started=$$(date +%s); \
	$(CARGO) build --locked -p earshot --no-default-features || { kill $$venv 2>/dev/null; exit 1; }; \
	echo "==> earshot built in $$(( $$(date +%s) - started )) s; waiting for the Kokoro venv"; \
	wait $$venv || { cat $(ROOT)/.run/venv.log; exit 1; }; echo "==> the Kokoro venv is ready ($$(( $$(date +%s) - started )) s)"
	@EARSHOT_BIN=$(LOCAL_DIR)/earshot $(ROOT)/scripts/run-local.sh

run-aws: deps-rust kokoro-venv
	@echo "==> building earshot with its AWS clients and the AWS stand-ins (dev build)"
	$(CARGO) build --locked -p earshot -p earshot-standins
	@PATH_MODE=aws EARSHOT_BIN=$(LOCAL_DIR)/earshot STANDINS_BIN=$(LOCAL_DIR)/earshot-standins $(ROOT)/scripts/run-local.sh

# The stages of make test, in order (scripts/make-test.sh runs them). Each prints its wall and CPU time as it
# ends, and the table comes at the end (BENCHMARKS.md, "Build and test times", keeps the figures).
TEST_STAGES := lint test-rust conformance test-kokoro test-e2e test-run test-web test-deploy test-lambda test-lambda-package test-bench
# Stages that judge nothing by the clock run in the background from the start, on the processor time the
# others leave idle (the idle scheduling class): the Lambda package (a release build with LTO for another
# processor, minutes on 2 cores) and the CDK app's checks. test-lambda-package waits for them, then checks
# the package. The build takes cargo's locks of target/release and the cross target, which no stage builds
# into, and the background leaves make's jobserver to the stages.
TEST_BACKGROUND := build-lambda test-cdk
test: deps-rust
	@# The CDK app's packages first: test-cdk (in the background) and test-deploy both use them.
	@$(MAKE) --no-print-directory -C infra/cdk deps
	@STAGES="$(TEST_STAGES)" BACKGROUND="$(TEST_BACKGROUND)" WAIT_BEFORE=test-lambda-package MAKE="$(MAKE)" $(ROOT)/scripts/make-test.sh

lint: deps-rust
	@echo "==> formatting (cargo fmt --check; rustfmt.toml)"
	$(CARGO) fmt --all --check
	@echo "==> clippy on every target, warnings as errors"
	$(CARGO) clippy --workspace --all-targets --locked --quiet -- -D warnings
	@echo "==> clippy on make run's build (earshot without the cargo feature aws)"
	$(CARGO) clippy -p earshot --no-default-features --all-targets --locked --quiet -- -D warnings
	@echo "==> no package folder compiled into a test (clones share one target folder, and a test binary another clone built is not rebuilt: cargo names the folder at run time)"
	@status=0; found=$$(grep -rn --include='*.rs' 'env!("CARGO_MANIFEST_DIR")' $(ROOT)/functions $(ROOT)/tests $(ROOT)/bench) || status=$$?; \
	[ $$status -le 1 ] || exit 2; \
	found=$$(printf '%s\n' "$$found" | grep -v 'map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR"))' || true); \
	[ -z "$$found" ] || { printf '%s\n' "$$found"; echo 'lint: read std::env::var_os("CARGO_MANIFEST_DIR") at run time (or earshot_e2e::package_dir())'; exit 1; }
	@echo "==> the docs, warnings as errors (cargo doc with private items: a broken link fails)"
	RUSTDOCFLAGS="-D warnings -A rustdoc::private_intra_doc_links" $(CARGO) doc --workspace --no-deps --document-private-items --locked --quiet
	@test -x $(MACHETE) || { echo "==> installing cargo-machete (finds unused dependencies) into $(TOOLS)"; $(CARGO) install --quiet --locked cargo-machete@0.9.2 --root $(TOOLS); }
	@echo "==> unused dependencies (cargo machete)"
	$(MACHETE)

test-rust: deps-rust
	@echo "==> Rust tests (cargo test --workspace); build outputs in $(CARGO_TARGET_DIR)"
	$(CARGO) test --workspace --locked --exclude earshot-e2e

conformance: deps-rust
	@echo "==> sentence-boundary conformance scores (data: $(EARSHOT_TESTDATA)/sbd)"
	$(CARGO) test --quiet --locked -p earshot-text --test conformance -- --nocapture

test-kokoro:
	@echo "==> Kokoro container tests (real model, onnx engine)"
	$(MAKE) --no-print-directory -C infra/kokoro test

# The reference decoders that judge compressed answers from outside (Ogg Opus, MP3, AAC, FLAC).
audio-decoders:
	@$(ROOT)/scripts/debian-packages.sh opusdec:opus-tools mpg123:mpg123 faad:faad flac:flac

test-e2e: deps-rust kokoro-venv moto-venv peer-venv livekit-venv audio-decoders
	@echo "==> earshot's pipecat voice: its own unit tests (pipecat from the peer venv)"
	cd $(ROOT)/clients/pipecat && PYTHONPATH=. $(ROOT)/bench/peer/.venv/bin/python -m unittest discover -s tests -q
	@echo "==> end-to-end tests: the local stack and the hardening cases against the real Kokoro container (two binaries at a time where safe; E2E_LANES=1 for one)"
	$(CARGO) build --quiet --locked -p earshot
	$(CARGO) test --quiet --locked -p earshot-e2e --no-run
	@# Two lanes, each with one Kokoro container for its binaries' shared one (the binaries that stop or slow a container start their own).
	$(ROOT)/scripts/test-e2e.sh

moto-venv:
	@test -x $(EARSHOT_MOTO_SERVER) -a $(MOTO_VENV)/.installed -nt $(ROOT)/tests/moto/requirements.txt || { \
	  echo "==> installing moto's server (DynamoDB, Polly and SageMaker for the interrupt store's and health probes' tests) into tests/moto/.venv (PyPI)"; \
	  python3 -m venv $(MOTO_VENV) && $(MOTO_VENV)/bin/pip install --quiet --disable-pip-version-check -r $(ROOT)/tests/moto/requirements.txt && touch $(MOTO_VENV)/.installed; }

test-run: deps-rust kokoro-venv
	@echo "==> make run and make run-aws: they speak, and stop everything they started however they are stopped"
	$(CARGO) build --quiet --locked -p earshot -p earshot-standins
	EARSHOT_BIN=$(CARGO_TARGET_DIR)/debug/earshot STANDINS_BIN=$(CARGO_TARGET_DIR)/debug/earshot-standins $(ROOT)/scripts/test-run-local.sh

kokoro-venv:
	@$(MAKE) --no-print-directory -C infra/kokoro venv

test-web: deps-rust kokoro-venv
	@echo "==> web client tests: the parser under node, the demo page in headless Chromium"
	$(CARGO) build --quiet --locked -p earshot
	EARSHOT_BIN=$(CARGO_TARGET_DIR)/debug/earshot $(ROOT)/scripts/test-web.sh

build: deps-rust
	@echo "==> building release binaries"
	$(CARGO) build --release --locked -p earshot

# The benchmarks: every suite of earshot-bench, with release builds, into bench/results/.
# BENCH_ARGS passes options through, e.g. BENCH_ARGS="--suites load,transport --trials 5".
BENCH_OUT ?= $(ROOT)/bench/results
bench: deps-rust kokoro-venv bench-venv peer-venv moto-venv fastkokoro-venv
	@echo "==> building release binaries for the benchmarks (earshot, earshot-bench, the AWS stand-ins, the Lambda bootstrap)"
	$(CARGO) build --release --locked -p earshot -p earshot-bench -p earshot-standins -p earshot-lambda
	@echo "==> running the benchmarks; progress below, logs in $(BENCH_OUT)/logs"
	$(CARGO_TARGET_DIR)/release/earshot-bench --out $(BENCH_OUT) --kokoro-dir $(ROOT)/infra/kokoro --moto-server $(EARSHOT_MOTO_SERVER) --bootstrap $(CARGO_TARGET_DIR)/release/bootstrap $(BENCH_ARGS)
	@echo "==> drawing the plots"
	$(ROOT)/bench/.venv/bin/python $(ROOT)/bench/plot.py $(BENCH_OUT)
	@echo "==> report: $(BENCH_OUT)/report.md"

bench-venv:
	@test -x $(ROOT)/bench/.venv/bin/python -a $(ROOT)/bench/.venv/.installed -nt $(ROOT)/bench/requirements.txt || { \
	  echo "==> installing matplotlib for the benchmark plots into bench/.venv (PyPI)"; \
	  python3 -m venv $(ROOT)/bench/.venv && $(ROOT)/bench/.venv/bin/pip install --quiet -r $(ROOT)/bench/requirements.txt && touch $(ROOT)/bench/.venv/.installed; }

# The peer suite's other side: pipecat 1.14 with its Kokoro voice (kokoro-onnx), pinned, in a venv of its own.
# LiveKit Agents' OpenAI voice, in a venv of its own (clients/livekit/requirements.txt, pinned), for its check.
livekit-venv:
	@test -x $(ROOT)/clients/livekit/.venv/bin/python -a $(ROOT)/clients/livekit/.venv/.installed -nt $(ROOT)/clients/livekit/requirements.txt || { \
	  echo "==> installing LiveKit Agents and its OpenAI plugin into clients/livekit/.venv (PyPI; the check that its OpenAI voice speaks through earshot)"; \
	  python3 -m venv $(ROOT)/clients/livekit/.venv && $(ROOT)/clients/livekit/.venv/bin/pip install --quiet --disable-pip-version-check -r $(ROOT)/clients/livekit/requirements.txt && touch $(ROOT)/clients/livekit/.venv/.installed; }

peer-venv:
	@test -x $(ROOT)/bench/peer/.venv/bin/python -a $(ROOT)/bench/peer/.venv/.installed -nt $(ROOT)/bench/peer/requirements.txt || { \
	  echo "==> installing pipecat with its Kokoro voice into bench/peer/.venv (PyPI; the other side of the peer benchmark)"; \
	  python3 -m venv $(ROOT)/bench/peer/.venv && $(ROOT)/bench/peer/.venv/bin/pip install --quiet --disable-pip-version-check -r $(ROOT)/bench/peer/requirements.txt && touch $(ROOT)/bench/peer/.venv/.installed; }

# fastkokoro (PyPI), the other side of the bench's fastkokoro suite, in a venv of its own.
fastkokoro-venv:
	@test -x $(ROOT)/bench/fastkokoro/.venv/bin/fastkokoro -a $(ROOT)/bench/fastkokoro/.venv/.installed -nt $(ROOT)/bench/fastkokoro/requirements.txt || { \
	  echo "==> installing fastkokoro into bench/fastkokoro/.venv (PyPI; the other side of the fastkokoro benchmark)"; \
	  python3 -m venv $(ROOT)/bench/fastkokoro/.venv && $(ROOT)/bench/fastkokoro/.venv/bin/pip install --quiet --disable-pip-version-check -r $(ROOT)/bench/fastkokoro/requirements.txt && touch $(ROOT)/bench/fastkokoro/.venv/.installed; }

# The benchmark harness on a tiny input (one trial per cell), so that make bench keeps working.
test-bench: deps-rust kokoro-venv bench-venv peer-venv moto-venv fastkokoro-venv fastkokoro-venv
	@echo "==> the benchmark harness, quick run (figures meaningless; make bench measures)"
	$(CARGO) build --quiet --locked -p earshot -p earshot-bench -p earshot-standins
	@out=$$(mktemp -d); \
	$(CARGO_TARGET_DIR)/debug/earshot-bench --quick --out $$out --kokoro-dir $(ROOT)/infra/kokoro --moto-server $(EARSHOT_MOTO_SERVER) --command "make test-bench" && \
	$(ROOT)/bench/.venv/bin/python $(ROOT)/bench/plot.py $$out && \
	for f in report.md results.json release.png floor.png gaps.png load.png; do test -s $$out/$$f || { echo "test-bench: $$f is missing"; exit 1; }; done && \
	for s in "## 1. Release" "## 2. Orchestration" "## 3. Gaps" "## 4. Load" "## 5. The Kokoro" "## 6. Transport" "## 7. Cold start" "## 8. Segmenter" "## 9. Overload" "## 10. Polly" "## 11. Interrupts" "## 12. Agent sources" "## 13. Piece plan" "## 14. First audio" "## 15. Sentence cache" "## 16. Audio formats" "## 17. Owner checks" "## 18. Capacity" "## 19. Peer" "## 20. OpenAI" "## 21. Beside fastkokoro"; do grep -q "$$s" $$out/report.md || { echo "test-bench: the report has no section $$s"; exit 1; }; done && \
	rm -rf $$out && echo "==> the benchmark harness works"

test-cdk:
	@echo "==> CDK app: assertions on the synthesized templates (offline, no credentials, no Docker)"
	$(MAKE) --no-print-directory -C infra/cdk deps test lint

# make deploy, make doctor and make destroy as a new user types them, with recording stand-ins for aws, docker,
# npx/cdk, cargo and rustup first on PATH (tests/deploy): what each process received is asserted.
test-deploy: deps-rust
	@echo "==> the deploy rehearsal: make deploy, doctor and destroy run as written, aws/docker/cdk/cargo recorded (tests/deploy)"
	@$(MAKE) --no-print-directory -C infra/cdk deps
	$(CARGO) build --quiet --locked -p earshot -p earshot-standins
	python3 $(ROOT)/tests/deploy/rehearse.py $(CARGO_TARGET_DIR)/debug/earshot $(CARGO_TARGET_DIR)/debug/earshot-standins

test-lambda: deps-rust kokoro-venv moto-venv peer-venv audio-decoders
	@echo "==> the Lambda under cargo lambda watch (function URL, response streaming) against the AWS stand-ins"
	$(ROOT)/scripts/test-lambda.sh

synth:
	$(MAKE) --no-print-directory -C infra/cdk deps synth

lambda-tools:
	@test "$$(cat "$(LAMBDA_TOOLS)/.installed" 2>/dev/null)" = "$(LAMBDA_PINS)" || { \
	  if [ -e "$(LAMBDA_TOOLS)" ] && [ ! -e "$(LAMBDA_TOOLS)/pyvenv.cfg" ]; then \
	    echo "earshot: $(LAMBDA_TOOLS) is there but is no venv: remove it, or set LAMBDA_TOOLS to a new folder"; exit 1; fi; \
	  echo "==> installing cargo-lambda and ziglang from PyPI into $(LAMBDA_TOOLS)"; rm -rf "$(LAMBDA_TOOLS)" && \
	  python3 -m venv "$(LAMBDA_TOOLS)" && "$(LAMBDA_TOOLS)/bin/pip" install --quiet --disable-pip-version-check $(LAMBDA_PINS) && \
	  echo "$(LAMBDA_PINS)" > "$(LAMBDA_TOOLS)/.installed"; }

# The Lambda's processor, from the CDK config (arm64 unless it says x86_64).
LAMBDA_ARCH ?= $(shell cd $(ROOT)/infra/cdk && node -p "require('./earshot.config.json').lambdaArchitecture || 'arm64'" 2>/dev/null || echo arm64)
# One build of the bootstrap for `make deploy` and `make test` alike: cargo-lambda, release (its size
# optimizations, stripped), for provided.al2023 on $(1) (arm64 or x86_64), into $(CARGO_TARGET_DIR)/lambda-$(1).
lambda-build = PATH=$(LAMBDA_TOOLS)/bin:$$PATH cargo lambda build --release --locked $(if $(filter arm64,$(1)),--arm64,--x86-64) -p earshot-lambda --lambda-dir $(CARGO_TARGET_DIR)/lambda-$(1)

build-lambda: lambda-tools
	@$(ROOT)/scripts/debian-packages.sh cmake:cmake  # libopus is built from source (opusic-sys)
	@arch=$(LAMBDA_ARCH); \
	if [ "$$arch" = arm64 ] && ! rustup target list --installed 2>/dev/null | grep -q '^aarch64-unknown-linux-gnu$$' && ! rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1; then \
	  echo "==> the arm64 Rust standard library cannot be installed here (rustup target add aarch64-unknown-linux-gnu failed):"; \
	  echo "    building for x86_64 instead; make deploy deploys the function as x86_64 to match"; arch=x86_64; fi; \
	echo "==> building the Lambda bootstrap for $$arch (provided.al2023) with cargo-lambda"; \
	if [ "$$arch" = arm64 ]; then $(call lambda-build,arm64); else $(call lambda-build,x86_64); fi && \
	echo "$$arch" > $(CARGO_TARGET_DIR)/lambda-arch && \
	ls -l $(CARGO_TARGET_DIR)/lambda-$$arch/bootstrap/bootstrap | awk '{print "==> bootstrap size: " $$5 " bytes"}'

# Before any build (minutes on a laptop): credentials and a Region, where the aws CLI can tell.
deploy-credentials:
	@if command -v aws >/dev/null; then \
	  aws sts get-caller-identity >/dev/null 2>&1 || { echo "earshot: no AWS credentials: 'aws sts get-caller-identity' failed (run 'aws configure' or 'aws sso login', or set AWS_PROFILE); nothing was built or created"; exit 1; }; \
	  region="$${AWS_REGION:-$${AWS_DEFAULT_REGION:-$$(aws configure get region 2>/dev/null || true)}}"; \
	  [ -n "$$region" ] || { echo "earshot: no AWS Region: set AWS_REGION or 'aws configure set region …'; nothing was built or created"; exit 1; }; \
	  echo "==> deploying to $$region with the credentials of $$(aws sts get-caller-identity --query Arn --output text 2>/dev/null)"; \
	else \
	  echo "    the aws CLI is not installed: the preflight asks AWS through the SDK before the build"; \
	fi

# Everything a deployment lacks is asked before the build (minutes): the Region's offer, the quotas, the
# concurrency to reserve. The deploy after the build does not ask again (PREFLIGHT_DONE).
deploy-preflight:
	@$(MAKE) --no-print-directory -C infra/cdk preflight CDK_ARGS="$(CDK_ARGS) -c lambdaArchitecture=$(LAMBDA_ARCH)"

deploy: deploy-credentials deploy-preflight build-lambda
	@arch=$$(cat $(CARGO_TARGET_DIR)/lambda-arch); \
	$(MAKE) --no-print-directory -C infra/cdk deps deploy PREFLIGHT_DONE=1 BOOTSTRAP_DIR=$(CARGO_TARGET_DIR)/lambda-$$arch/bootstrap CDK_ARGS="$(CDK_ARGS) -c lambdaArchitecture=$$arch"

# After make deploy: one short conversation pinned to each arm of the deployed gateway (earshot doctor), with the
# fix for what stops an arm. The URL and auth come from the deploy's outputs; in token mode give TOKEN=….
doctor: build
	@outputs=infra/cdk/cdk.out/outputs.json; test -f $$outputs || { echo "earshot: no $$outputs: run make deploy first"; exit 1; }; \
	url=$$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(next(v["FunctionUrl"] for v in o.values() if "FunctionUrl" in v))' $$outputs); \
	auth=$$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(next(v["AuthType"] for v in o.values() if "AuthType" in v))' $$outputs); \
	echo "==> earshot doctor --url $$url (auth $$auth)"; \
	if [ "$$auth" = "AWS_IAM" ]; then $(EARSHOT) doctor --url "$$url" --sigv4; \
	elif [ "$$auth" = "TOKEN" ]; then $(EARSHOT) doctor --url "$$url" --token "$${TOKEN:?token mode: give TOKEN=\$$(earshot token --keys … --backend kokoro --backend polly)}"; \
	else $(EARSHOT) doctor --url "$$url"; fi

# The package make deploy uploads, built by the same target (arm64, or x86_64 where arm64 cannot be built),
# then checked: the right ELF, stripped, within Lambda's size limits, and, on its own processor, that it runs
# (a bad setting is named at init).
test-lambda-package: build-lambda
	@arch=$$(cat $(CARGO_TARGET_DIR)/lambda-arch); \
	$(ROOT)/scripts/check-lambda-package.sh $(CARGO_TARGET_DIR)/lambda-$$arch/bootstrap/bootstrap $$arch

destroy:
	$(MAKE) --no-print-directory -C infra/cdk deps destroy

kokoro-local:
	$(MAKE) --no-print-directory -C infra/kokoro serve

clean:
	$(CARGO) clean
	$(MAKE) --no-print-directory -C infra/kokoro clean
