# memform: `make run` runs the bundled dataset, `make test` runs the tests.
# Builds go to a persistent target directory outside the clone so CI and
# later checkouts reuse them.
CARGO_TARGET_DIR ?= $(HOME)/.cache/memform-target
export CARGO_TARGET_DIR
CARGO ?= cargo
BIN := $(CARGO_TARGET_DIR)/release/memform
LOCOMO ?= ../shared/datasets/locomo

.PHONY: all build run test bench locomo clean-reports

all: build

build:
	$(CARGO) build --release --locked

## Run the bundled scenarios dataset; writes reports/scenarios-rules/.
run: build
	$(BIN) run --dataset datasets/scenarios --mode rules --out reports/scenarios-rules > /dev/null

## Every test: unit, snapshot, CLI, determinism, kill-and-rerun.
test:
	$(CARGO) test --locked

## Criterion benches (MEMFORM_BENCH_DATASET picks the dataset; default datasets/scenarios).
bench:
	$(CARGO) bench --locked --bench run

## The LoCoMo development conversations (read from $(LOCOMO), never copied).
locomo: build
	$(BIN) run --dataset $(LOCOMO) --mode rules --out reports/locomo-rules > /dev/null

clean-reports:
	rm -rf reports/*/
