#!/usr/bin/env python3
"""Fetch LoCoMo's locomo10.json, check its SHA-256, split it per conversation.

Used by `make locomo-data`. Writes RAW (the download, e.g.
data/locomo10.json) and one file per conversation into OUT/ (e.g.
data/locomo/26.json for sample `conv-26`), in the flat per-conversation
shape of LoCoMo's locomo10_v2 files: the `conversation` object's keys
(speakers, `session_N_date_time`, `session_N`), then `event_summary`'s
(`events_session_N`), `qa`, then `observation`'s (`session_N_observation`)
and `session_summary`'s (`session_N_summary`). OUT/.verified records the
digest it was made from, so a second run does nothing.

Every failure is one line on stderr and exit 1; an unreachable download
with an existing --fallback directory is one line and exit 0 (the caller
then reads the fallback). Standard library only.
"""

import argparse
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request

STAMP = ".verified"


def say(msg):
    print(f"locomo-data: {msg}", file=sys.stderr)


def fail(msg):
    say(msg)
    sys.exit(1)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url, dest, timeout):
    """Downloads url into dest (atomically); returns None or why it failed."""
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".locomo10.", suffix=".part", dir=os.path.dirname(dest) or ".")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while True:
                block = resp.read(1 << 20)
                if not block:
                    break
                out.write(block)
        os.replace(tmp, dest)
        return None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        return str(reason).strip() or type(e).__name__
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def sample_name(sample_id, index):
    """`conv-26` -> `26`, as the locomo10_v2 files are named."""
    s = str(sample_id) if sample_id is not None else str(index)
    for prefix in ("conv-", "conv_"):
        if s.startswith(prefix):
            s = s[len(prefix):]
    if not s or any(c in s for c in "/\\") or s.startswith("."):
        raise ValueError(f"[{index}].sample_id: {sample_id!r} is not usable as a file name")
    return s


def flatten(sample, index):
    """One locomo10.json sample as a flat locomo10_v2 conversation object."""
    if not isinstance(sample, dict):
        raise ValueError(f"[{index}]: expected an object")
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise ValueError(f"[{index}].conversation: missing or not an object")
    flat = dict(conv)
    for part in ("event_summary",):
        value = sample.get(part) or {}
        if not isinstance(value, dict):
            raise ValueError(f"[{index}].{part}: expected an object")
        flat.update(value)
    if "qa" in sample:
        flat["qa"] = sample["qa"]
    for part in ("observation", "session_summary"):
        value = sample.get(part) or {}
        if not isinstance(value, dict):
            raise ValueError(f"[{index}].{part}: expected an object")
        flat.update(value)
    return flat


def split(src, out_dir):
    """Splits src into out_dir/<name>.json; returns the names written."""
    try:
        with open(src, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{src}: not JSON ({e})")
    if not isinstance(data, list) or not data:
        raise ValueError(f"{src}: expected a non-empty list of conversations")
    files = {}
    for i, sample in enumerate(data):
        name = sample_name(sample.get("sample_id") if isinstance(sample, dict) else None, i)
        if name in files:
            raise ValueError(f"{src}: [{i}].sample_id: {name} appears twice")
        files[name] = flatten(sample, i)
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(".json") or old == STAMP:
            os.unlink(os.path.join(out_dir, old))
    for name, conv in files.items():
        path = os.path.join(out_dir, f"{name}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(conv, f, indent=2, ensure_ascii=False)
        os.replace(path + ".tmp", path)
    return sorted(files)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--sha256", required=True, help="the pinned digest of locomo10.json")
    p.add_argument("--raw", required=True, help="where the download goes (e.g. data/locomo10.json)")
    p.add_argument("--out", required=True, help="directory of the per-conversation files")
    p.add_argument("--fallback", help="a directory of per-conversation files to use when the download fails")
    p.add_argument("--timeout", type=float, default=30.0)
    a = p.parse_args()

    out_dir = a.out.rstrip("/")
    raw = a.raw
    stamp = os.path.join(out_dir, STAMP)
    want = a.sha256.strip().lower()

    if os.path.isfile(stamp) and open(stamp).read().strip() == want:
        n = len([f for f in os.listdir(out_dir) if f.endswith(".json")])
        say(f"{out_dir}/ is up to date ({n} conversations, locomo10.json {want[:12]})")
        return 0

    if not (os.path.isfile(raw) and sha256_file(raw) == want):
        why = download(a.url, raw, a.timeout)
        if why is not None:
            if a.fallback and os.path.isdir(a.fallback):
                say(f"cannot download {a.url} ({why}); using {a.fallback} instead")
                return 0
            where = f"; no fallback at {a.fallback} either" if a.fallback else ""
            fail(f"cannot download {a.url} ({why}){where}: put locomo10.json at {raw} and re-run, or point LOCOMO=DIR at per-conversation files")
        got = sha256_file(raw)
        if got != want:
            os.unlink(raw)
            fail(f"{a.url} has SHA-256 {got}, not the pinned {want} (LOCOMO_SHA256 in the Makefile); nothing written")

    try:
        names = split(raw, out_dir)
    except ValueError as e:
        fail(str(e))
    with open(stamp, "w") as f:
        f.write(want + "\n")
    say(f"wrote {len(names)} conversations to {out_dir}/ ({', '.join(names)}) from locomo10.json {want[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
