#!/usr/bin/env python3
"""memform's mem0 adapter: the adapter protocol of docs/adapters.md over mem0's
`Memory` (the pinned `mem0ai`, see requirements.txt).

- mem0's LLM and embedder are OpenAI clients pointed at memform's proxy
  (MEMFORM_PROXY_URL); its vector store (Qdrant, local mode) and its history
  database live in the conversation's `data_dir`, inside the run's build
  directory.
- Telemetry is off (MEM0_TELEMETRY=False, set before mem0 is imported).
- The episode's timestamp is "today": mem0's prompts carry the current date
  (2.x: "## Current Date" / "## Observation Date"), and each memory's
  created_at; both are the episode's, so replays do not depend on the day they
  run and memories carry the session date.
- mem0's memory ids are uuid4s; here they are drawn from a counter per
  conversation, so that two replays list the same memories in the same order.

What the adapter cannot see: mem0 keeps no source turn (a memory is formed
from the whole episode's messages), so memories are reported without
`source_turns`; mem0 2.x forms memories additively (ADD only: it reports no
UPDATE, DELETE or NONE).
"""
import json
import os
import sys
import uuid

os.environ["MEM0_TELEMETRY"] = "False"

# The protocol owns stdout: anything mem0 or its libraries print goes to stderr.
_proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import logging  # noqa: E402

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

_counter = [0]


def _next_uuid():
    _counter[0] += 1
    return uuid.UUID(int=_counter[0])


uuid.uuid4 = _next_uuid

# MEM0_ADAPTER_NOW=YYYY-MM-DD: the day mem0's clock reads (the tests replay
# under two such days; the episode's date must win wherever it matters).
_now = os.environ.get("MEM0_ADAPTER_NOW")
if _now:
    import datetime as _dt

    class _Clock(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            fixed = cls.fromisoformat(_now + "T12:00:00")
            return fixed.replace(tzinfo=tz) if tz is not None else fixed

        @classmethod
        def utcnow(cls):
            return cls.fromisoformat(_now + "T12:00:00")

    _dt.datetime = _Clock

from mem0 import Memory  # noqa: E402
import mem0.configs.prompts as prompts  # noqa: E402
import mem0.memory.main as mem0_main  # noqa: E402

_today = [None]
_original_resolve = prompts._resolve_dates


def _resolve_dates(current_date=None, observation_date=None):
    if current_date is None and _today[0] is not None:
        current_date = _today[0]
    return _original_resolve(current_date, observation_date)


prompts._resolve_dates = _resolve_dates

LLM_MODEL = os.environ.get("MEMFORM_MEM0_LLM_MODEL", "SmolLM2-135M-Instruct.Q4_1")
EMBED_MODEL = os.environ.get("MEMFORM_MEM0_EMBED_MODEL", "memform")


def reply(obj):
    _proto.write(json.dumps(obj) + "\n")
    _proto.flush()


def embedding_dims(base_url):
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "memform-proxy"))
    return len(client.embeddings.create(model=EMBED_MODEL, input=["dimensions"]).data[0].embedding)


def memory_for(conversation, data_dir):
    base_url = os.environ.get("MEMFORM_PROXY_URL")
    if not base_url:
        raise RuntimeError("MEMFORM_PROXY_URL is not set: run the mem0 profile with --mode llm")
    key = os.environ.get("OPENAI_API_KEY", "memform-proxy")
    dims = embedding_dims(base_url)
    config = {
        "llm": {
            "provider": "openai",
            "config": {"model": LLM_MODEL, "openai_base_url": base_url, "api_key": key, "temperature": 0.0, "max_tokens": 512},
        },
        "embedder": {
            "provider": "openai",
            "config": {"model": EMBED_MODEL, "openai_base_url": base_url, "api_key": key, "embedding_dims": dims},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "memform",
                "path": os.path.join(data_dir, "qdrant"),
                "on_disk": True,
                "embedding_model_dims": dims,
            },
        },
        "history_db_path": os.path.join(data_dir, "history.db"),
    }
    return Memory.from_config(config)


def held(m, conversation):
    rows = m.get_all(filters={"user_id": conversation}, top_k=100000).get("results", [])
    rows.sort(key=lambda r: r["id"])
    return [{"id": r["id"], "content": r["memory"]} for r in rows]


def main():
    m = None
    conversation = None
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError as e:
            reply({"ok": False, "error": "not JSON: %s" % e})
            continue
        op = msg.get("op")
        try:
            if op == "begin_conversation":
                conversation = msg["conversation"]
                _counter[0] = 0
                m = memory_for(conversation, msg["data_dir"])
                reply({"ok": True})
            elif op == "add_episode":
                ts = msg.get("timestamp")
                _today[0] = ts[:10] if ts else None
                messages = [{"role": "user", "content": "%s: %s" % (t["speaker"], t["text"])} for t in msg["turns"]]
                metadata = {"created_at": ts} if ts else None
                out = m.add(messages, user_id=conversation, metadata=metadata) if messages else {"results": []}
                decisions = [
                    {"event": r.get("event", "ADD"), "id": r.get("id"), "content": r.get("memory"), "previous": r.get("previous_memory")}
                    for r in out.get("results", [])
                ]
                reply({"ok": True, "memories": held(m, conversation), "decisions": decisions})
            elif op == "search":
                out = m.search(msg["query"], top_k=msg["k"], filters={"user_id": conversation}, threshold=0.0)
                hits = [{"id": r["id"], "content": r["memory"], "score": r.get("score")} for r in out.get("results", [])]
                reply({"ok": True, "hits": hits[: msg["k"]]})
            elif op == "end":
                reply({"ok": True})
                break
            else:
                reply({"ok": False, "error": "unknown op: %s" % op})
        except Exception as e:  # the run stops on it (exit 2), naming the episode
            reply({"ok": False, "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")})


if __name__ == "__main__":
    main()
