#!/usr/bin/env python3
"""Validate the labelled fact pairs (datasets/pairs/) and print their counts.

Usage: check_pairs.py [DIR]   (default datasets/pairs; `make pairs-check`)

Reads DIR/tune.jsonl and DIR/test.jsonl (one JSON object per line, the
format in docs/pairs.md) and checks: the exact set of fields and their
types; the label and that the kind belongs to it; non-empty single-line
texts; a first-person turn and a third-person observation naming the
speaker; ISO dates with the second after the first; ids unique across both
files and named `<label>-<kind>-<NN>` with NN running 01..n within a kind;
the split (consecutive numbers of a kind alternate between tune and test);
and the set-level rules (at least 400 pairs, every kind in both splits, at
least a quarter modelled on LoCoMo dev or the scenarios).

Prints the counts per label x kind x split and per `modelled_on` as
Markdown tables. Every problem is one line `FILE:LINE: FIELD: what` on
stderr; any problem exits 2 (a missing directory or file too). Exit 0 when
the set is valid. Standard library only.
"""

import datetime
import json
import os
import re
import sys

KINDS = {
    "update": ["job", "home", "relationship", "age", "favourite", "ownership",
               "plan-cancelled", "negation", "polarity-modifier", "role"],
    "duplicate": ["article", "number", "works-as", "word-order", "adverb", "paraphrase"],
    "coexist": ["multi-valued", "family-member", "different-time", "negation-other",
                "antonym-other-object", "games", "related-topic"],
}
LABELS = list(KINDS)
SPLITS = ["tune", "test"]
MODELLED_ON = ["locomo-dev", "scenarios", "new"]
FIELDS = {"id", "label", "kind", "speaker", "other", "first", "second", "note", "modelled_on"}
SIDE_FIELDS = {"turn", "observation", "date"}
MIN_PAIRS = 400
MIN_MODELLED_SHARE = 0.25
FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b", re.I)
# In an observation only the capital pronoun counts ("I"), so names like "Mira" pass.
OBS_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|me|my|we|our|us)\b")
ID_RE = re.compile(r"^(update|duplicate|coexist)-([a-z-]+)-(\d{2,3})$")


class Problems:
    def __init__(self):
        self.lines = []

    def add(self, where, field, msg):
        self.lines.append(f"{where}: {field}: {msg}")


def text(p, where, field, value):
    if not isinstance(value, str):
        p.add(where, field, f"expected a string, got {type(value).__name__}")
        return False
    if not value.strip():
        p.add(where, field, "empty")
        return False
    if value != value.strip() or "\n" in value or "\r" in value or "\t" in value:
        p.add(where, field, "leading/trailing whitespace or a line break")
        return False
    return True


def date(p, where, field, value):
    if not text(p, where, field, value):
        return None
    try:
        d = datetime.date.fromisoformat(value)
    except ValueError:
        p.add(where, field, f"{value!r} is not a YYYY-MM-DD date")
        return None
    if len(value) != 10:
        p.add(where, field, f"{value!r} is not a YYYY-MM-DD date")
        return None
    return d


def check_record(p, where, r):
    """Validates one pair; returns (id, label, kind, modelled_on) or None."""
    if not isinstance(r, dict):
        p.add(where, "(line)", "expected a JSON object")
        return None
    keys = set(r)
    for k in sorted(FIELDS - keys):
        p.add(where, k, "missing")
    for k in sorted(keys - FIELDS):
        p.add(where, k, "unknown field")
    if FIELDS - keys:
        return None
    ok = True
    for k in ("id", "label", "kind", "speaker", "other", "note", "modelled_on"):
        ok &= text(p, where, k, r[k])
    if not ok:
        return None
    label, kind = r["label"], r["kind"]
    if label not in KINDS:
        p.add(where, "label", f"{label!r} is not one of {', '.join(LABELS)}")
        return None
    if kind not in KINDS[label]:
        p.add(where, "kind", f"{kind!r} is not a kind of {label} ({', '.join(KINDS[label])})")
        return None
    if r["modelled_on"] not in MODELLED_ON:
        p.add(where, "modelled_on", f"{r['modelled_on']!r} is not one of {', '.join(MODELLED_ON)}")
    m = ID_RE.match(r["id"])
    if not m or m.group(1) != label or m.group(2) != kind:
        p.add(where, "id", f"{r['id']!r} is not {label}-{kind}-NN")
    if r["speaker"] == r["other"]:
        p.add(where, "other", "same as speaker")
    dates = []
    for side in ("first", "second"):
        s = r[side]
        if not isinstance(s, dict):
            p.add(where, side, "expected an object")
            return None
        for k in sorted(SIDE_FIELDS - set(s)):
            p.add(where, f"{side}.{k}", "missing")
        for k in sorted(set(s) - SIDE_FIELDS):
            p.add(where, f"{side}.{k}", "unknown field")
        if SIDE_FIELDS - set(s):
            return None
        if text(p, where, f"{side}.turn", s["turn"]) and not FIRST_PERSON.search(s["turn"]):
            p.add(where, f"{side}.turn", "not in the first person (no I/me/my/we/our/us)")
        if text(p, where, f"{side}.observation", s["observation"]):
            obs = s["observation"]
            if r["speaker"] not in obs:
                p.add(where, f"{side}.observation", f"does not name the speaker {r['speaker']!r}")
            if OBS_FIRST_PERSON.search(obs):
                p.add(where, f"{side}.observation", "has a first-person pronoun (observations are third person)")
            if not obs.endswith("."):
                p.add(where, f"{side}.observation", "does not end with a full stop")
        dates.append(date(p, where, f"{side}.date", s["date"]))
    if None not in dates and dates[1] <= dates[0]:
        p.add(where, "second.date", f"{r['second']['date']} is not after first.date {r['first']['date']}")
    if r["first"]["observation"] == r["second"]["observation"]:
        p.add(where, "second.observation", "identical to first.observation")
    return r["id"], label, kind, r["modelled_on"]


def load(p, path, split):
    rows = []
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        p.add(path, "(file)", f"cannot read ({e.strerror})")
        return rows
    with f:
        for n, line in enumerate(f, 1):
            where = f"{path}:{n}"
            if not line.strip():
                p.add(where, "(line)", "empty line")
                continue
            try:
                r = json.loads(line)
            except ValueError as e:
                p.add(where, "(line)", f"not JSON ({e})")
                continue
            got = check_record(p, where, r)
            if got:
                rows.append((where, split) + got)
    return rows


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else "datasets/pairs"
    p = Problems()
    for split in SPLITS:
        path = os.path.join(root, f"{split}.jsonl")
        if not os.path.isfile(path):
            print(f"{path}: (file): missing (expected {', '.join(s + '.jsonl' for s in SPLITS)} in {root})", file=sys.stderr)
            return 2
    rows = []
    for split in SPLITS:
        rows += load(p, os.path.join(root, f"{split}.jsonl"), split)

    # Ids unique across both files; numbers 01..n within a kind; alternating split.
    seen = {}
    by_kind = {}
    for where, split, pid, label, kind, _ in rows:
        if pid in seen:
            p.add(where, "id", f"{pid!r} already used at {seen[pid]}")
            continue
        seen[pid] = where
        m = ID_RE.match(pid)
        if m:
            by_kind.setdefault((label, kind), {})[int(m.group(3))] = (split, where)
    for (label, kind), nums in sorted(by_kind.items()):
        want = list(range(1, len(nums) + 1))
        if sorted(nums) != want:
            p.add(root, f"id ({label}-{kind})", f"numbers are {sorted(nums)}, expected 01..{len(nums):02d} without gaps")
            continue
        for n in want[1:]:
            if nums[n][0] == nums[n - 1][0]:
                p.add(nums[n][1], "id", f"{label}-{kind}-{n:02d} is in {nums[n][0]} like {n - 1:02d}; consecutive pairs of a kind alternate between tune and test")

    # Set-level rules.
    count = {}
    for _, split, _, label, kind, mo in rows:
        count[(label, kind, split)] = count.get((label, kind, split), 0) + 1
        count[("mo", mo, split)] = count.get(("mo", mo, split), 0) + 1
    total = len(rows)
    if total < MIN_PAIRS:
        p.add(root, "(set)", f"{total} pairs, at least {MIN_PAIRS} expected")
    for label in LABELS:
        for kind in KINDS[label]:
            for split in SPLITS:
                if not count.get((label, kind, split)):
                    p.add(root, "(set)", f"no {label}/{kind} pair in {split}")
    modelled = sum(v for (a, mo, _), v in count.items() if a == "mo" and mo != "new")
    if total and modelled < MIN_MODELLED_SHARE * total:
        p.add(root, "(set)", f"{modelled} of {total} pairs modelled on LoCoMo dev or the scenarios, at least a quarter expected")

    # Counts.
    body = []
    for label in LABELS:
        for kind in KINDS[label]:
            t, s = count.get((label, kind, "tune"), 0), count.get((label, kind, "test"), 0)
            body.append([label, kind, t, s, t + s])
    for label in LABELS:
        t = sum(count.get((label, k, "tune"), 0) for k in KINDS[label])
        s = sum(count.get((label, k, "test"), 0) for k in KINDS[label])
        body.append([f"**{label}**", "(all)", t, s, t + s])
    t = sum(v for (a, _, sp), v in count.items() if a != "mo" and sp == "tune")
    s = sum(v for (a, _, sp), v in count.items() if a != "mo" and sp == "test")
    body.append(["**all**", "", t, s, t + s])
    print(table(["label", "kind", "tune", "test", "total"], body))
    print()
    mo_rows = []
    for mo in MODELLED_ON:
        t, s = count.get(("mo", mo, "tune"), 0), count.get(("mo", mo, "test"), 0)
        mo_rows.append([mo, t, s, t + s])
    print(table(["modelled_on", "tune", "test", "total"], mo_rows))
    print()

    if p.lines:
        for line in p.lines:
            print(line, file=sys.stderr)
        print(f"check_pairs: {len(p.lines)} problem(s) in {root}", file=sys.stderr)
        return 2
    print(f"check_pairs: {root} is valid: {total} pairs, {modelled} modelled on LoCoMo dev or the scenarios")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
