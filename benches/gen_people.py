#!/usr/bin/env python3
"""Writes one long conversation that names many distinct people, for the
entity-resolution scale run (a conversation's entities grow with its length).

Shape: one conversation of T turns (default 100,000) in episodes of 10
turns, a user and "Assistant" alternating, the user first. Most user turns
say something about a person named by first and last name, drawn from 60 x
60 = 3,600 names with a bias to new ones, so the number of distinct people
grows with T (about 3,000 at 100,000 turns); some turns name a person met
before. The assistant answers with small talk that yields no fact.

Deterministic (xorshift64*, seeded by T): the same arguments give the same
bytes on any Python 3.

Usage: python3 benches/gen_people.py OUT_DIR [T]
Writes OUT_DIR/conversations/people.json (native format,
memform-conversation/1, see datasets/README.md). No gold labels.
"""

import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_longmem import Rng  # noqa: E402  (the same deterministic generator)

FIRST = ["Olivia", "Liam", "Emma", "Noah", "Amara", "Kenji", "Sofia", "Mateo", "Priya", "Lars", "Chloe", "Tariq",
         "Ingrid", "Diego", "Mei", "Oskar", "Leila", "Jonas", "Aisha", "Pavel", "Nadia", "Hugo", "Zara", "Felix",
         "Yara", "Marco", "Elena", "Kofi", "Hanna", "Rafael", "Ines", "Tomas", "Lucia", "Anders", "Rosa", "Dmitri",
         "Maya", "Arjun", "Freya", "Omar", "Clara", "Viktor", "Sana", "Bruno", "Greta", "Idris", "Nora", "Emil",
         "Lina", "Marcus", "Anya", "Jamal", "Eva", "Kai", "Selma", "Ravi", "Julia", "Finn", "Amina", "Luca"]
LAST = ["Kowalski", "Okafor", "Lindqvist", "Tanaka", "Moreau", "Silva", "Novak", "Haddad", "Fischer", "Romero",
        "Nakamura", "Andersen", "Costa", "Petrov", "Mensah", "Schmidt", "Rossi", "Yilmaz", "Dubois", "Kaur",
        "Jensen", "Ivanova", "Santos", "Berg", "Watanabe", "Mueller", "Garcia", "Nilsson", "Adeyemi", "Horvat",
        "Laine", "Bianchi", "Kim", "Larsen", "Ortiz", "Sato", "Weber", "Popescu", "Eriksen", "Chen",
        "Varga", "Hansen", "Moretti", "Ali", "Kruger", "Duarte", "Lehmann", "Park", "Svensson", "Mazur",
        "Ferreira", "Ito", "Keller", "Nowak", "Reyes", "Holm", "Conti", "Aziz", "Brandt", "Lopez"]
CITIES = ["Paris", "Berlin", "Lisbon", "Tokyo", "Toronto", "Nairobi", "Oslo", "Denver", "Madrid", "Seoul"]
COMPANIES = ["Google", "Acme", "Initech", "Globex", "Umbrella", "Hooli"]

SAYS = [
    lambda r, p: f"My friend {p} lives in {r.pick(CITIES)}.",
    lambda r, p: f"My colleague {p} works at {r.pick(COMPANIES)}.",
    lambda r, p: f"I met {p} at the conference in {r.pick(CITIES)}.",
    lambda r, p: f"{p} is my neighbour.",
    lambda r, p: f"I had lunch with {p} yesterday.",
]

ASSISTANT = ["That sounds nice.", "Thanks for telling me.", "I see. Tell me more.", "How lovely!"]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gen_people.py OUT_DIR [T]")
    out = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    r = Rng(total)
    names = [f"{f} {l}" for f in FIRST for l in LAST]
    # A fixed order of first meetings, so the count of distinct people grows with T.
    order = sorted(range(len(names)), key=lambda i: (i * 2654435761) % 4294967296)
    met = 0
    start = datetime.datetime(2023, 1, 1, 9, 0, 0)
    episodes, n, e = [], 0, 0
    while n < total:
        turns = []
        for t in range(min(10, total - n)):
            n += 1
            if t % 2 == 0:
                if met < len(names) and (met == 0 or r.below(100) < 6):
                    person = names[order[met]]
                    met += 1
                else:
                    person = names[order[r.below(met)]]
                text = r.pick(SAYS)(r, person)
                speaker = "User"
            else:
                text = r.pick(ASSISTANT)
                speaker = "Assistant"
            turns.append({"id": f"t{n}", "speaker": speaker, "text": text})
        day = start + datetime.timedelta(hours=e)
        episodes.append({"id": f"e{e + 1}", "timestamp": day.isoformat(), "turns": turns})
        e += 1
    conv = {"format": "memform-conversation/1", "id": "people", "speakers": ["User", "Assistant"], "episodes": episodes}
    os.makedirs(os.path.join(out, "conversations"), exist_ok=True)
    with open(os.path.join(out, "conversations", "people.json"), "w", encoding="utf-8") as f:
        json.dump(conv, f, ensure_ascii=False, separators=(",", ":"))
    print(f"{out}: 1 conversation, {n} turns, {len(episodes)} episodes, {met} distinct people", file=sys.stderr)


if __name__ == "__main__":
    main()
