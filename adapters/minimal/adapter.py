#!/usr/bin/env python3
"""The minimal adapter of docs/adapters.md: every turn is a memory (a raw
baseline). Standard library only."""
import json
import sys

memories = []  # one dict per turn: id, content, source_turns

for line in sys.stdin:
    msg = json.loads(line)
    op = msg.get("op")
    if op == "begin_conversation":
        memories.clear()
        reply = {"ok": True}
    elif op == "add_episode":
        for turn in msg["turns"]:
            memories.append({"id": turn["id"], "content": turn["speaker"] + ": " + turn["text"], "source_turns": [turn["id"]]})
        reply = {"ok": True, "memories": memories,
                 "decisions": [{"event": "ADD", "id": t["id"]} for t in msg["turns"]]}
    elif op == "search":
        words = set(msg["query"].lower().split())
        ranked = sorted(memories, key=lambda m: -len(words & set(m["content"].lower().split())))
        reply = {"ok": True, "hits": [{"id": m["id"], "content": m["content"]} for m in ranked[: msg["k"]]]}
    elif op == "end":
        reply = {"ok": True}
    else:
        reply = {"ok": False, "error": "unknown op: %s" % op}
    print(json.dumps(reply), flush=True)
    if op == "end":
        break
