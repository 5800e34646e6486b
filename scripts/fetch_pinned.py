#!/usr/bin/env python3
"""Fetch pinned files (URL + SHA-256) into a git-ignored directory.

Used by `make pairs-data` (SICK and MSRP from brmson/dataset-sts) and
`make locomo-audit-data` (errors.json from dial481/locomo-audit). Each
`--file NAME=URL=SHA256` is downloaded, checked against its digest and
written to OUT/NAME. The write is all-or-nothing: every file is fetched and
checked in a staging directory first, and OUT/ is only touched once all of
them match. A run whose files are already in OUT/ with the pinned digests
does nothing (idempotent).

When a download fails (no network, HTTP error) the script says so in one
line and copies the same files from --fallback instead, checked against the
same digests. `--extra NAME=URL` names companion files (readmes, licence
notes): fetched from URL, or copied from the fallback when present there;
never required and never checked against a digest.

Every failure is one line on stderr and exit 1; nothing is written then.
A digest that does not match (downloaded or in the fallback) is such a
failure. Standard library only.
"""

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request

TAG = "fetch"


def say(msg):
    print(f"{TAG}: {msg}", file=sys.stderr)


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
    """Downloads url into dest; returns None or why it failed (one line)."""
    try:
        with open(dest, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while True:
                block = resp.read(1 << 20)
                if not block:
                    break
                out.write(block)
        return None
    except (urllib.error.URLError, OSError, ValueError) as e:
        if os.path.exists(dest):
            os.unlink(dest)
        reason = getattr(e, "reason", None) or e
        return " ".join(str(reason).split()) or type(e).__name__


def parse_file(spec):
    """`NAME=URL=SHA256` -> (name, url, sha256)."""
    name, sep, rest = spec.partition("=")
    url, sep2, digest = rest.rpartition("=")
    digest = digest.strip().lower()
    if not sep or not sep2 or not name or not url:
        raise ValueError(f"--file {spec!r}: expected NAME=URL=SHA256")
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"--file {spec!r}: the SHA-256 must be 64 hex digits")
    check_name(name, spec)
    return name, url, digest


def parse_extra(spec):
    """`NAME=URL` -> (name, url)."""
    name, sep, url = spec.partition("=")
    if not sep or not name or not url:
        raise ValueError(f"--extra {spec!r}: expected NAME=URL")
    check_name(name, spec)
    return name, url


def check_name(name, spec):
    if "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"{spec!r}: {name!r} is not a plain file name")


def up_to_date(out_dir, files):
    for name, _, digest in files:
        path = os.path.join(out_dir, name)
        if not (os.path.isfile(path) and sha256_file(path) == digest):
            return False
    return True


def stage_download(stage, files, extras, timeout):
    """Downloads into stage; returns None, or (url, why) of the first failure."""
    for name, url, _ in files:
        why = download(url, os.path.join(stage, name), timeout)
        if why is not None:
            return url, why
    for name, url in extras:
        why = download(url, os.path.join(stage, name), timeout)
        if why is not None:
            say(f"note: cannot download {name} ({why}); continuing without it")
    return None


def stage_fallback(stage, fallback, files, extras):
    """Copies the fallback's files into stage; returns None or why not."""
    for name, _, _ in files:
        src = os.path.join(fallback, name)
        if not os.path.isfile(src):
            return f"{src} is missing"
        shutil.copyfile(src, os.path.join(stage, name))
    for name, _ in extras:
        src = os.path.join(fallback, name)
        if os.path.isfile(src):
            shutil.copyfile(src, os.path.join(stage, name))
    return None


def verify(stage, files, origin):
    """Fails (exit 1) on the first staged file whose digest is not the pinned one."""
    for name, _, digest in files:
        got = sha256_file(os.path.join(stage, name))
        if got != digest:
            fail(f"{name} from {origin} has SHA-256 {got}, not the pinned {digest}; nothing written")


def main():
    global TAG
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tag", default="fetch", help="the prefix of every message (e.g. pairs-data)")
    p.add_argument("--out", required=True, help="directory the files are written to")
    p.add_argument("--file", action="append", default=[], help="NAME=URL=SHA256 (repeatable)")
    p.add_argument("--extra", action="append", default=[], help="NAME=URL: an optional companion file (repeatable)")
    p.add_argument("--fallback", help="a directory holding the same files, used when a download fails")
    p.add_argument("--timeout", type=float, default=30.0)
    a = p.parse_args()
    TAG = a.tag

    try:
        files = [parse_file(s) for s in a.file]
        extras = [parse_extra(s) for s in a.extra]
    except ValueError as e:
        fail(str(e))
    if not files:
        fail("no --file given")
    if not (0 < a.timeout <= 600):
        fail(f"--timeout {a.timeout}: must be in (0, 600] seconds")

    out_dir = a.out.rstrip("/") or "."
    names = ", ".join(n for n, _, _ in files)
    if up_to_date(out_dir, files):
        say(f"{out_dir}/ is up to date ({names}, SHA-256 checked)")
        return 0

    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".fetch-", dir=parent)
    try:
        failed = stage_download(stage, files, extras, a.timeout)
        origin = "the download"
        if failed is not None:
            url, why = failed
            if not (a.fallback and os.path.isdir(a.fallback)):
                where = f"; no fallback at {a.fallback} either" if a.fallback else ""
                fail(f"cannot download {url} ({why}){where}: put {names} into {out_dir}/ by hand and re-run")
            say(f"cannot download {url} ({why}); copying from {a.fallback} instead")
            for f in os.listdir(stage):
                os.unlink(os.path.join(stage, f))
            why = stage_fallback(stage, a.fallback, files, extras)
            if why is not None:
                fail(f"fallback {a.fallback}: {why}; nothing written")
            origin = a.fallback
        verify(stage, files, origin)
        os.makedirs(out_dir, exist_ok=True)
        written = sorted(os.listdir(stage))
        for f in written:
            os.replace(os.path.join(stage, f), os.path.join(out_dir, f))
        say(f"wrote {', '.join(written)} to {out_dir}/ from {origin} (SHA-256 checked: {names})")
        return 0
    finally:
        shutil.rmtree(stage, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
