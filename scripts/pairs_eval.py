#!/usr/bin/env python3
"""Measure a profile's decisions on labelled fact pairs (datasets/pairs).

Each pair becomes one native conversation (`memform-conversation/1`) of two
episodes, one turn each, whose gold facts are the pair's two observations
(the turn as evidence). `memform run --extract gold --no-qa` forms them,
then each pair's outcome is read from `facts.jsonl`: the second fact was
*merged* into the first, *replaced* it, or both were *kept*.

  scripts/pairs_eval.py --pairs datasets/pairs/tune.jsonl --profile soda \
      [--memform target/release/memform] [--set key=value ...] [--list]

Prints the confusion matrix, the four rates (update recall, false
invalidation rate, duplicate recall, false merge rate) and per-kind rows;
`--list` prints every pair whose outcome is not its label's. Standard
library only. `memform calibrate` is the harness's own measure; this script
is a stand-in that reads the run's output files.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

MERGED = {"exact_duplicate", "near_duplicate", "judged_new", "deduped", "none", "discard", "merge"}


def conversation(p):
    """The pair as a native conversation."""
    first, second = p["first"], p["second"]
    speakers = [p["speaker"], p.get("other") or "Friend"]
    if speakers[1] == speakers[0]:
        speakers[1] = "Friend"

    def stamp(side, default):
        d = side.get("date") or default
        return d if "T" in d else d + "T12:00:00"

    return {
        "format": "memform-conversation/1",
        "id": p["id"],
        "speakers": speakers,
        "episodes": [
            {"id": "e1", "timestamp": stamp(first, "2024-01-01"), "turns": [{"id": "t1", "speaker": p["speaker"], "text": first["turn"]}]},
            {"id": "e2", "timestamp": stamp(second, "2024-06-01"), "turns": [{"id": "t2", "speaker": p["speaker"], "text": second["turn"]}]},
        ],
        "gold": {
            "facts": [
                {"id": "g1", "episode": "e1", "text": first["observation"], "evidence": ["t1"]},
                {"id": "g2", "episode": "e2", "text": second["observation"], "evidence": ["t2"]},
            ]
        },
    }


def outcome(rows):
    """merged / replaced / kept for one conversation's facts.jsonl rows (or
    `first_lost` when the first fact was never stored)."""
    rows = sorted(rows, key=lambda r: (r.get("episode") or "", r.get("turn") or ""))
    firsts = [r for r in rows if r.get("episode") == "e1"]
    seconds = [r for r in rows if r.get("episode") == "e2"]
    if not seconds:
        return "kept"
    stored = [r for r in firsts if r.get("outcome") in ("created", "shadow_created")]
    if not stored and firsts and not any(r.get("formed") for r in firsts):
        return "first_lost"
    for r in seconds:
        o = r.get("outcome")
        formed = r.get("formed") or {}
        action = (formed.get("resolution") or {}).get("action") if isinstance(formed, dict) else None
        if action:
            reason = (formed.get("resolution") or {}).get("reason", "")
            if action == "evolve":
                return "replaced" if reason.startswith("Supersedes") else "merged"
            return "merged" if action in ("discard", "merge") else "kept"
        if o in ("updated", "deleted", "closure"):
            return "replaced"
        if r.get("invalidated") or r.get("ended") or any((v.get("verdict") == "old") for v in r.get("verdicts") or []):
            return "replaced"
        if o in MERGED:
            return "merged"
    return "kept"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--profile", default="soda")
    ap.add_argument("--memform", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "memform"))
    ap.add_argument("--extract", default="gold")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", help="keep the dataset and run here")
    a = ap.parse_args()
    pairs = [json.loads(l) for l in open(a.pairs, encoding="utf-8") if l.strip()]
    work = a.keep or tempfile.mkdtemp(prefix="pairs-eval-")
    ds = os.path.join(work, "dataset")
    os.makedirs(os.path.join(ds, "conversations"), exist_ok=True)
    for p in pairs:
        with open(os.path.join(ds, "conversations", p["id"] + ".json"), "w", encoding="utf-8") as f:
            json.dump(conversation(p), f)
    out = os.path.join(work, "run-" + a.profile)
    cmd = [a.memform, "run", "--dataset", ds, "--extract", a.extract, "--no-qa", "--profile", a.profile, "--out", out]
    for s in a.set:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"memform failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    facts = None
    for root, _, files in os.walk(out):
        if "facts.jsonl" in files:
            facts = os.path.join(root, "facts.jsonl")
    if not facts:
        sys.exit(f"no facts.jsonl under {out}")
    by_conv = collections.defaultdict(list)
    for line in open(facts, encoding="utf-8"):
        row = json.loads(line)
        by_conv[row.get("conversation")].append(row)
    confusion = collections.Counter()
    per_kind = collections.defaultdict(collections.Counter)
    wrong = []
    for p in pairs:
        o = outcome(by_conv.get(p["id"], []))
        confusion[(p["label"], o)] += 1
        per_kind[(p["label"], p.get("kind", ""))][o] += 1
        want = {"update": "replaced", "duplicate": "merged", "coexist": "kept"}[p["label"]]
        if o != want:
            wrong.append((p, o))
    n = collections.Counter(p["label"] for p in pairs)

    def formed(label):
        return sum(v for (l, o), v in confusion.items() if l == label and o != "first_lost")

    def rate(labels, o):
        d = sum(formed(l) for l in labels)
        return sum(confusion[(l, o)] for l in labels) / d if d else float("nan")

    print(f"profile {a.profile}, {len(pairs)} pairs ({dict(n)}), {a.pairs}")
    print("label      merged replaced kept first_lost")
    for label in ("update", "duplicate", "coexist"):
        print(f"{label:10} " + " ".join(f"{confusion[(label, o)]:>6}" for o in ("merged", "replaced", "kept", "first_lost")))
    # As `memform calibrate` defines them: pairs whose first fact was not stored are left out.
    print(f"pairs_update_recall           {rate(['update'], 'replaced'):.3f}")
    print(f"pairs_false_invalidation_rate {rate(['coexist'], 'replaced'):.3f}")
    print(f"pairs_duplicate_recall        {rate(['duplicate'], 'merged'):.3f}")
    print(f"pairs_false_merge_rate        {rate(['update', 'coexist'], 'merged'):.3f}")
    print("per kind (label/kind: merged replaced kept):")
    for (label, kind), c in sorted(per_kind.items()):
        print(f"  {label}/{kind}: {c['merged']} {c['replaced']} {c['kept']} {c['first_lost']}")
    if a.list:
        for p, o in wrong:
            print(f"--- {p['id']} {p['label']}/{p.get('kind')} got {o}\n    1: {p['first']['observation']}\n    2: {p['second']['observation']}")


if __name__ == "__main__":
    main()
