#!/usr/bin/env python3
"""Writes a synthetic dataset of LongMemEval size for scale runs (issue 11).

Shape: C conversations (default 500) x S sessions (default 50) x T turns
(default 10) = 250,000 turns. Each conversation has two speakers, a user
(a first name) and "Assistant", alternating turns, the user first. About
45% of all turns are first-person statements by the user, drawn from a
small vocabulary (likes and dislikes, loves and hates, work, home, car,
pets, sports, visits, plans): so facts repeat (exact duplicates), single-
valued ones change over time (works at, lives in, drives: verdict `old`),
and multi-valued ones pile up (likes, enjoys, visited). The other turns are
the assistant's replies and the user's questions and small talk, which
yield no fact. One session a day from 2023-01-01 per conversation.

Deterministic: a fixed xorshift generator seeded per conversation, so the
same arguments give the same bytes on any Python 3.

Usage: python3 benches/gen_longmem.py OUT_DIR [C [S [T]]]
Writes OUT_DIR/conversations/lm-NNNN.json (native format,
memform-conversation/1, see datasets/README.md). No gold labels.
"""

import datetime
import json
import os
import sys

NAMES = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jade"]
FOODS = ["pizza", "sushi", "tacos", "ramen", "pasta", "curry", "salad", "pancakes", "dumplings", "steak",
         "green tea", "coffee", "chocolate", "noodles", "burgers", "soup"]
ACTIVITIES = ["hiking", "painting", "cooking", "reading novels", "swimming", "gardening", "chess",
              "photography", "running", "knitting", "jazz", "yoga"]
COMPANIES = ["Google", "Acme", "Initech", "Globex", "Umbrella", "Stark Industries", "Wayne Enterprises", "Hooli"]
CITIES = ["Paris", "Berlin", "Lisbon", "Tokyo", "Toronto", "Nairobi", "Oslo", "Denver", "Madrid", "Seoul"]
CARS = ["Honda Civic", "Toyota Corolla", "Ford Focus", "Tesla Model 3", "Subaru Outback", "Mazda 3"]
PETS = ["dog", "cat", "parrot", "rabbit", "hamster"]
PET_NAMES = ["Max", "Luna", "Rocky", "Bella", "Milo", "Coco"]
SPORTS = ["tennis", "soccer", "basketball", "golf", "volleyball", "badminton"]

STATEMENTS = [
    (6, lambda r: f"I like {r.pick(FOODS)}."),
    (3, lambda r: f"I love {r.pick(ACTIVITIES)}."),
    (2, lambda r: f"I hate {r.pick(FOODS)}."),
    (2, lambda r: f"I enjoy {r.pick(ACTIVITIES)} on weekends."),
    (2, lambda r: f"I work at {r.pick(COMPANIES)}."),
    (2, lambda r: f"I live in {r.pick(CITIES)}."),
    (1, lambda r: f"I drive a {r.pick(CARS)}."),
    (1, lambda r: f"I have a {r.pick(PETS)} named {r.pick(PET_NAMES)}."),
    (1, lambda r: f"I play {r.pick(SPORTS)} every week."),
    (2, lambda r: f"I visited {r.pick(CITIES)} last month."),
    (1, lambda r: f"I am planning to move to {r.pick(CITIES)}."),
    (1, lambda r: f"I don't like {r.pick(FOODS)} anymore."),
]

OTHER_USER = [
    lambda r: f"What do you think about {r.pick(CITIES)}?",
    lambda r: "Can you recommend a good book?",
    lambda r: "Thanks, that helps.",
    lambda r: f"How long does it take to get to {r.pick(CITIES)}?",
    lambda r: "Good morning!",
    lambda r: f"Is {r.pick(FOODS)} healthy?",
]

ASSISTANT = [
    lambda r: "That sounds great!",
    lambda r: "Thanks for sharing that with me.",
    lambda r: f"Many people enjoy {r.pick(ACTIVITIES)} as well.",
    lambda r: "Here are a few ideas you could try.",
    lambda r: "I see. Tell me more.",
    lambda r: f"{r.pick(CITIES)} is a lovely place to visit.",
    lambda r: "Sure, happy to help with that.",
]


class Rng:
    """xorshift64*: deterministic, independent of Python's random module."""

    def __init__(self, seed):
        self.s = (seed * 0x9E3779B97F4A7C15 + 1) & 0xFFFFFFFFFFFFFFFF or 1

    def next(self):
        s = self.s
        s ^= (s >> 12)
        s ^= (s << 25) & 0xFFFFFFFFFFFFFFFF
        s ^= (s >> 27)
        self.s = s
        return (s * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF

    def below(self, n):
        return (self.next() >> 11) % n

    def pick(self, items):
        return items[self.below(len(items))]


TOTAL_WEIGHT = sum(w for w, _ in STATEMENTS)


def statement(r):
    k = r.below(TOTAL_WEIGHT)
    for w, f in STATEMENTS:
        if k < w:
            return f(r)
        k -= w
    raise AssertionError


def conversation(ci, sessions, turns_per):
    r = Rng(ci + 1)
    user = NAMES[ci % len(NAMES)]
    start = datetime.datetime(2023, 1, 1, 9, 0, 0)
    episodes, n = [], 0
    for s in range(sessions):
        day = start + datetime.timedelta(days=s)
        turns = []
        for t in range(turns_per):
            n += 1
            if t % 2 == 0:
                # User turns are 50% of turns; 90% of them are statements: 45% overall.
                text = statement(r) if r.below(10) < 9 else r.pick(OTHER_USER)(r)
                speaker = user
            else:
                text = r.pick(ASSISTANT)(r)
                speaker = "Assistant"
            turns.append({"id": f"t{n}", "speaker": speaker, "text": text})
        episodes.append({"id": f"s{s + 1}", "timestamp": day.strftime("%Y-%m-%dT%H:%M:%S"), "turns": turns})
    return {
        "format": "memform-conversation/1",
        "id": f"lm-{ci:04d}",
        "description": "Synthetic LongMemEval-sized conversation (benches/gen_longmem.py).",
        "speakers": [user, "Assistant"],
        "episodes": episodes,
    }


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gen_longmem.py OUT_DIR [CONVERSATIONS [SESSIONS [TURNS]]]")
    out = sys.argv[1]
    c, s, t = (int(x) for x in (sys.argv[2:] + ["500", "50", "10"][len(sys.argv) - 2:])[:3])
    if min(c, s, t) < 1:
        sys.exit("counts must be positive")
    os.makedirs(os.path.join(out, "conversations"), exist_ok=True)
    for ci in range(c):
        conv = conversation(ci, s, t)
        with open(os.path.join(out, "conversations", conv["id"] + ".json"), "w") as f:
            json.dump(conv, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
