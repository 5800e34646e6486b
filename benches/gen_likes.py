#!/usr/bin/env python3
"""Writes the "many likes" dataset of issue 11 (judging is quadratic).

Shape: one conversation, one speaker ("Alice", listed alone), N distinct
"I like X." statements, one statement per turn, 10 turns per session, one
session a day starting 2024-01-01 (so 4,000 statements are 400 sessions).
Every X is a different made-up two-word item ("<adjective> <noun>", both
drawn without repeats from pseudo-words built of syllables), so no two
statements are duplicates and each one becomes a `likes` candidate that
stage 4 could pair with every earlier one. Deterministic: the same N gives
the same bytes.

Usage: python3 benches/gen_likes.py N OUT_DIR
Writes OUT_DIR/conversations/likes-N.json (native format,
memform-conversation/1, see datasets/README.md). No gold labels.
"""

import datetime
import json
import os
import sys

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "da", "fi", "gu", "ha", "je", "bo"]
PER_SESSION = 10


def words(count, length, offset):
    """`count` distinct pseudo-words of `length` syllables, deterministic."""
    out = []
    i = offset
    n = len(SYLLABLES)
    while len(out) < count:
        k, w = i, []
        for _ in range(length):
            w.append(SYLLABLES[k % n])
            k //= n
        out.append("".join(w))
        i += 1
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen_likes.py N OUT_DIR")
    n = int(sys.argv[1])
    out = sys.argv[2]
    if n < 1:
        sys.exit("N must be positive")
    # N items as adjective x noun pairs over two disjoint pseudo-word lists.
    side = 1
    while side * side < n:
        side += 1
    adjectives = words(side, 3, 0)
    nouns = words(side, 3, 7 * side + 11)
    items = [f"{adjectives[i % side]} {nouns[(i // side + i) % side]}" for i in range(n)]
    assert len(set(items)) == n
    episodes = []
    start = datetime.datetime(2024, 1, 1, 10, 0, 0)
    for s in range(0, n, PER_SESSION):
        day = start + datetime.timedelta(days=s // PER_SESSION)
        turns = [
            {"id": f"t{i + 1}", "speaker": "Alice", "text": f"I like {items[i]}."}
            for i in range(s, min(n, s + PER_SESSION))
        ]
        episodes.append({"id": f"s{s // PER_SESSION + 1}", "timestamp": day.strftime("%Y-%m-%dT%H:%M:%S"), "turns": turns})
    conv = {
        "format": "memform-conversation/1",
        "id": f"likes-{n}",
        "description": f"One speaker states {n} different likes, {PER_SESSION} per session (issue 11 repro).",
        "speakers": ["Alice"],
        "episodes": episodes,
    }
    os.makedirs(os.path.join(out, "conversations"), exist_ok=True)
    with open(os.path.join(out, "conversations", f"likes-{n}.json"), "w") as f:
        json.dump(conv, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
