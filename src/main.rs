//! The `memform` command line: the only place that prints. stdout carries
//! machine-readable output only; progress and errors go to stderr.
//! Exit codes: 0 ok, 1 a gate failed, 2 an error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use memform::config::{Config, WriteMode};
use memform::embed::hashed::HashedEmbedder;
use memform::extract::RulesExtractor;
use memform::judge::RulesJudge;
use memform::pipeline::Stages;
use memform::run::{Progress, RunOptions, Skipped, run};
use memform::types::Warning;

#[derive(Parser)]
#[command(name = "memform", version, about = "Offline evaluation harness for LLM-agent memory formation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a dataset through extract → resolve → dedupe → judge → write.
    Run(RunArgs),
    /// Print the default configuration as TOML (every key, documented in src/config.rs).
    Config,
}

#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    Rules,
    Llm,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Dataset directory (native format or LoCoMo JSON; detected).
    #[arg(long)]
    dataset: PathBuf,
    #[arg(long, value_enum, default_value = "rules")]
    mode: Mode,
    /// shadow | controlled | full.
    #[arg(long, default_value = "full")]
    write_mode: String,
    /// TOML file of config overrides.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one config key (repeatable): --set near_dup_threshold=0.9
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Output directory (default: reports/<dataset>-<mode>). Its previous run files are replaced.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Skip a conversation that fails, count it, and exit 2 at the end.
    #[arg(long)]
    keep_going: bool,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", chain(&e));
            ExitCode::from(2)
        }
    }
}

fn chain(e: &anyhow::Error) -> String {
    e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Config => {
            print!("{}", toml::to_string_pretty(&Config::default()).context("serialise config")?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load_config(path: Option<&PathBuf>, sets: &[String]) -> Result<Config> {
    let mut cfg = match path {
        Some(p) => Config::from_toml_file(p)?,
        None => Config::default(),
    };
    for s in sets {
        cfg.set(s)?;
    }
    Ok(cfg)
}

/// One stderr line per kind of loader warning, with a count and an example.
fn report_load_warnings(warnings: &[Warning]) {
    let mut kinds: Vec<&str> = warnings.iter().map(|w| w.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for k in kinds {
        let of_kind: Vec<&Warning> = warnings.iter().filter(|w| w.kind == k).collect();
        eprintln!("warning: {} × {k} (e.g. {})", of_kind.len(), of_kind[0].message);
    }
}

fn cmd_run(args: RunArgs) -> Result<ExitCode> {
    let mut cfg = load_config(args.config.as_ref(), &args.set)?;
    cfg.set_write_mode(WriteMode::parse(&args.write_mode)?);
    cfg.validate()?;
    let (dataset, load_warnings, bad) = if args.keep_going {
        memform::dataset::load_keep_going(&args.dataset)?
    } else {
        let (d, w) = memform::dataset::load_with_report(&args.dataset)?;
        (d, w, Vec::new())
    };
    report_load_warnings(&load_warnings);
    let skipped_inputs: Vec<Skipped> = bad
        .into_iter()
        .map(|b| Skipped { conversation: b.path.display().to_string(), error: b.error.to_string() })
        .collect();
    let mode_name = match args.mode {
        Mode::Rules => "rules",
        Mode::Llm => "llm",
    };
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-{mode_name}", dataset.name)));
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    if let Mode::Llm = args.mode {
        bail!("llm mode is not available in this build");
    }
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} episodes {elapsed} eta {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} {mode_name}", dataset.name));
    let pb = bar.clone();
    let mut extra = serde_json::Map::new();
    extra.insert("mode".into(), mode_name.into());
    extra.insert("dataset_path".into(), args.dataset.display().to_string().into());
    let opts = RunOptions {
        out_dir: out.clone(),
        threads: args.threads,
        keep_going: args.keep_going,
        skipped_inputs,
        progress: Some(Arc::new(move |p| match p {
            Progress::Start { episodes } => pb.set_length(episodes as u64),
            Progress::Episode { conversation, episode } => {
                pb.set_message(format!("{conversation}/{episode}"));
                pb.inc(1);
            }
        })),
        manifest_extra: extra,
    };
    let output = run(&dataset, &cfg, stages, &opts)?;
    bar.finish_and_clear();
    println!("{}", serde_json::to_string_pretty(&output.summary).context("serialise summary")?);
    eprintln!("wrote {}", output.out_dir.display());
    if !output.skipped.is_empty() {
        for s in &output.skipped {
            eprintln!("error: skipped conversation {}: {}", s.conversation, s.error);
        }
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
