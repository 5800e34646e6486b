//! Build-time provenance: the git revision memform is built from and whether
//! the checkout had uncommitted changes to tracked files, for `run.json`
//! (see src/provenance.rs). Outside a git checkout, or without git, both are
//! "unknown"; nothing here can fail the build.
//!
//! The script re-runs when the revision or the tracked files change: it
//! watches `HEAD`, the index, the branch's ref and every tracked file, so a
//! build after an uncommitted edit (or after reverting it) carries the new
//! dirty flag. Untracked and ignored files (reports/, models/) are not
//! watched and do not make a checkout dirty.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// (revision, dirty) of the checkout whose top level is `dir`, or `None`.
pub fn describe(dir: &Path) -> Option<(String, bool)> {
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?.trim());
    // A crate unpacked inside some other repository is not a memform checkout.
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let abs = |p: String| {
        let p = PathBuf::from(p.trim());
        if p.is_absolute() { p } else { dir.join(p) }
    };
    let git_dir = abs(git(dir, &["rev-parse", "--git-dir"])?);
    let common_dir = abs(git(dir, &["rev-parse", "--git-common-dir"])?);
    watch(&git_dir.join("HEAD"));
    watch(&git_dir.join("index"));
    watch(&common_dir.join("packed-refs"));
    if let Some(head) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watch(&common_dir.join(head.trim()));
    }
    if let Some(files) = git(dir, &["ls-files", "-z"]) {
        for f in files.split('\0').filter(|f| !f.is_empty()) {
            watch(&dir.join(f));
        }
    }
    let revision = git(dir, &["rev-parse", "--verify", "HEAD"])?.trim().to_string();
    let status = git(dir, &["status", "--porcelain", "--untracked-files=no"])?;
    Some((revision, !status.trim().is_empty()))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let (revision, dirty) = match describe(&dir) {
        Some((r, d)) => (r, if d { "true" } else { "false" }.to_string()),
        None => ("unknown".to_string(), "unknown".to_string()),
    };
    println!("cargo:rustc-env=MEMFORM_GIT_REVISION={revision}");
    println!("cargo:rustc-env=MEMFORM_GIT_DIRTY={dirty}");
}
