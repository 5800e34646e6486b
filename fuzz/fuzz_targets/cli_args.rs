//! The command line on arbitrary bytes: the fuzz input split at NUL bytes
//! (an argument cannot hold one) is the argument list, non-UTF-8 bytes
//! included (paths are bytes on Unix). Parsing (clap, src/cli.rs) and the
//! checks that need no dataset (config `--set`s, `--tag`s, modes, output
//! directories, the command line the lock file records) never panic, and
//! every error is one line.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use clap::Parser;
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/cli.rs"]
mod cli;

fn one_line(e: &memform::error::Error) {
    let msg = memform::error::chain(e);
    assert!(!msg.contains('\n'), "a multi-line error: {msg}");
}

fn config(c: &cli::ConfigArgs) {
    let mut cfg = memform::pipeline::Config::default();
    for s in &c.set {
        if let Err(e) = cfg.set(s) {
            one_line(&e);
        }
    }
    if let Some(p) = &c.profile
        && let Err(e) = memform::pipeline::profiles::by_name(p)
    {
        one_line(&e);
    }
    if let Err(e) = cfg.validate() {
        one_line(&e);
    }
}

fn tags(t: &[String]) {
    if let Err(e) = memform::provenance::parse_tags(t) {
        one_line(&e);
    }
}

fn out_dir(flag: &str, p: Option<&std::path::Path>) {
    if let Some(p) = p
        && let Err(e) = memform::paths::check_out_dir(flag, p, None)
    {
        one_line(&e);
    }
}

fn stage(s: &cli::StageArgs) {
    if let Err(e) = s.embed.parse::<memform::embed::cache::EmbedMode>() {
        one_line(&e);
    }
    if let Err(e) = memform::llm::LlmMode::parse(&s.llm) {
        one_line(&e);
    }
}

fuzz_target!(|data: &[u8]| {
    let args: Vec<OsString> =
        std::iter::once(OsString::from("memform")).chain(data.split(|b| *b == 0).map(|a| OsString::from_vec(a.to_vec()))).collect();
    let recorded = memform::rundir::command_line(args.clone());
    assert!(!recorded.contains('\n'), "the lock file's command line is one line: {recorded}");
    let parsed = match cli::Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() {
                let line = cli::one_line_clap_error(&e.render().to_string());
                assert!(line.starts_with("error: "), "{line}");
                assert!(!line.lines().next().unwrap_or_default().is_empty());
            }
            return;
        }
    };
    match &parsed.command {
        cli::Command::Run(a) => {
            config(&a.config);
            tags(&a.tag);
            stage(&a.stage);
            out_dir("--out", a.out.as_deref());
        }
        cli::Command::Sweep(a) => {
            config(&a.config);
            tags(&a.tag);
            stage(&a.stage);
            out_dir("--out", a.out.as_deref());
        }
        cli::Command::Compare(a) => {
            config(&a.config);
            tags(&a.tag);
            stage(&a.stage);
            for m in a.modes.iter().flat_map(|m| m.split(',')) {
                if let Err(e) = memform::pipeline::Modes::parse(m) {
                    assert!(!e.contains('\n'), "a multi-line error: {e}");
                }
            }
            out_dir("--out", a.out.as_deref());
            out_dir("--runs-dir", a.runs_dir.as_deref());
        }
        cli::Command::Gate(a) => {
            if let Some(j) = &a.junit {
                let inputs = [("the baseline", a.baseline.as_path())];
                let dirs: Vec<&std::path::Path> = a.run.iter().map(|p| p.as_path()).collect();
                if let Err(e) = memform::paths::check_not_input("--junit", j, &inputs, &dirs) {
                    one_line(&e);
                }
            }
        }
        _ => {}
    }
});
