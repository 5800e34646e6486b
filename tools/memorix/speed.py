#!/usr/bin/env python3
"""Whole-process wall time, paired and alternating: Memorix's own rules
formation over LoCoMo's speaker turns in Node (locomo_bench.mjs, no store)
against `memform run --profile memorix --mode rules --no-qa` (store writes
and reports included; the QA retrieval evaluation, on by default since it
landed, is skipped: Memorix's pass does no retrieval). Prints every pair and the medians.

usage: speed.py MEMFORM_BIN LOCOMO_DIR [PAIRS] [OUT_DIR]"""
import glob
import os
import statistics
import subprocess
import sys
import time


def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    memform, locomo = sys.argv[1], sys.argv[2]
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 11
    out = sys.argv[4] if len(sys.argv) > 4 else "/tmp/memform-memorix-speed"
    here = os.path.dirname(os.path.abspath(__file__))
    files = sorted(glob.glob(os.path.join(locomo, "*.json")))
    node = ["node", os.path.join(here, "locomo_bench.mjs"), *files]
    ours = [memform, "run", "--dataset", locomo, "--profile", "memorix", "--mode", "rules", "--no-qa", "--out", out]
    a, b = [], []
    for i in range(pairs):
        # Alternate which goes first.
        if i % 2 == 0:
            a.append(wall(node))
            b.append(wall(ours))
        else:
            b.append(wall(ours))
            a.append(wall(node))
        print(f"pair {i + 1}: memorix (node) {a[-1]:.3f} s, memform {b[-1]:.3f} s", flush=True)
    print(f"median over {pairs} pairs: memorix (node) {statistics.median(a):.3f} s, memform {statistics.median(b):.3f} s")


if __name__ == "__main__":
    main()
