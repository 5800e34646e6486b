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
    /// Run (or reuse) two configurations on one dataset and compare them: compare.json, compare.md.
    Compare(CompareArgs),
}

#[derive(clap::Args)]
struct CompareArgs {
    /// Dataset directory (native format or LoCoMo JSON; detected).
    #[arg(long)]
    dataset: PathBuf,
    /// The two modes, A then B; the uplift is B − A (`rules,rules` with --set-b compares two configs).
    #[arg(long, default_value = "rules,llm")]
    modes: String,
    /// Embedder for both runs (sets the `embedder` config key).
    #[arg(long)]
    embedder: Option<String>,
    /// TOML file of config overrides, for both runs.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one config key for both runs (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Override one config key for run A only (repeatable).
    #[arg(long = "set-a", value_name = "KEY=VALUE")]
    set_a: Vec<String>,
    /// Override one config key for run B only (repeatable).
    #[arg(long = "set-b", value_name = "KEY=VALUE")]
    set_b: Vec<String>,
    /// shadow | controlled | full, for both runs.
    #[arg(long, default_value = "full")]
    write_mode: String,
    /// Where compare.json and compare.md go (default: reports/<dataset>-compare).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the two runs go (default: reports/); a run whose run.json matches is reused.
    #[arg(long)]
    runs_dir: Option<PathBuf>,
    /// Run both even when a matching run exists.
    #[arg(long)]
    rerun: bool,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = memform::compare::DEFAULT_RESAMPLES)]
    resamples: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = memform::compare::DEFAULT_SEED)]
    seed: u64,
    /// Worker threads per run (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
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
        Command::Compare(args) => cmd_compare(args),
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
    let extractor = RulesExtractor;
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

/// The stage implementations of one mode, owned.
struct OwnedStages {
    extractor: Box<dyn memform::extract::Extractor>,
    embedder: Box<dyn memform::embed::Embedder>,
    judge: Box<dyn memform::judge::Judge>,
}

impl OwnedStages {
    fn stages(&self) -> Stages<'_> {
        Stages { extractor: self.extractor.as_ref(), embedder: self.embedder.as_ref(), judge: self.judge.as_ref() }
    }
}

/// Builds the stages of `mode` under `cfg` (LLM mode and other embedders
/// plug in here).
fn build_stages(mode: Mode, cfg: &Config) -> Result<OwnedStages> {
    if let Mode::Llm = mode {
        bail!("llm mode is not available in this build");
    }
    if cfg.embedder != "hashed" {
        bail!("embedder {:?} is not available in this build (only \"hashed\")", cfg.embedder);
    }
    Ok(OwnedStages {
        extractor: Box::new(RulesExtractor),
        embedder: Box::new(HashedEmbedder::new(cfg.hashed_dims)),
        judge: Box::new(RulesJudge::new(cfg)),
    })
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Rules => "rules",
        Mode::Llm => "llm",
    }
}

/// A label and a directory-safe slug for one side of a comparison.
fn side_label(mode: Mode, sets: &[String], embedder: Option<&str>) -> (String, String) {
    let mut label = mode_name(mode).to_string();
    if let Some(e) = embedder {
        label.push_str(&format!("+embedder={e}"));
    }
    for s in sets {
        label.push('+');
        label.push_str(s.trim());
    }
    let slug = label.chars().map(|c| if c.is_ascii_alphanumeric() || "._=+-".contains(c) { c } else { '_' }).collect();
    (label, slug)
}

fn cmd_compare(args: CompareArgs) -> Result<ExitCode> {
    let modes: Vec<Mode> = args
        .modes
        .split(',')
        .map(|m| Mode::from_str(m.trim(), true).map_err(|_| anyhow::anyhow!("--modes: unknown mode {:?} (expected rules or llm)", m.trim())))
        .collect::<Result<_>>()?;
    let [mode_a, mode_b] = modes[..] else { bail!("--modes: expected two modes, A,B (got {:?})", args.modes) };
    let dataset = memform::dataset::load(&args.dataset)?;
    let runs_dir = args.runs_dir.clone().unwrap_or_else(|| PathBuf::from("reports"));
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-compare", dataset.name)));
    let mut sides = Vec::new();
    for (mode, sets) in [(mode_a, &args.set_a), (mode_b, &args.set_b)] {
        let mut cfg = load_config(args.config.as_ref(), &args.set)?;
        for s in sets {
            cfg.set(s)?;
        }
        if let Some(e) = &args.embedder {
            cfg.set(&format!("embedder={e}"))?;
        }
        cfg.set_write_mode(WriteMode::parse(&args.write_mode)?);
        cfg.validate()?;
        let (label, slug) = side_label(mode, sets, args.embedder.as_deref());
        let owned = build_stages(mode, &cfg)?;
        sides.push((mode, cfg, label, runs_dir.join(format!("{}-{slug}", dataset.name)), owned));
    }
    if sides[0].2 == sides[1].2 {
        bail!("both sides are {:?}: give two modes, or --set-a/--set-b to vary the config", sides[0].2);
    }
    let mut compared = Vec::new();
    for (mode, cfg, label, dir, owned) in sides {
        let stages = owned.stages();
        let mut expected = serde_json::Map::new();
        expected.insert("dataset.digest".into(), dataset.digest.clone().into());
        expected.insert("config".into(), serde_json::to_value(&cfg).context("serialise config")?);
        expected.insert("mode".into(), mode_name(mode).into());
        expected.insert("extractor".into(), stages.extractor.id().into());
        expected.insert("embedder".into(), stages.embedder.id().into());
        expected.insert("judge".into(), stages.judge.id().into());
        expected.insert("memform_version".into(), env!("CARGO_PKG_VERSION").into());
        if !args.rerun && memform::compare::reusable(&dir, &expected) {
            eprintln!("reusing {} ({label}: its run.json matches)", dir.display());
        } else {
            eprintln!("running {label} into {}", dir.display());
            let mut extra = serde_json::Map::new();
            extra.insert("mode".into(), mode_name(mode).into());
            extra.insert("dataset_path".into(), args.dataset.display().to_string().into());
            let opts = RunOptions { out_dir: dir.clone(), threads: args.threads, manifest_extra: extra, ..RunOptions::default() };
            run(&dataset, &cfg, stages, &opts).with_context(|| format!("run {label}"))?;
        }
        compared.push(memform::compare::Side { label, dir });
    }
    let opts = memform::compare::CompareOptions { resamples: args.resamples, seed: args.seed };
    let comparison = memform::compare::compare_runs(&compared[0], &compared[1], &out, opts)?;
    memform::compare::write_comparison(&out, &comparison)?;
    println!("{}", serde_json::to_string_pretty(&comparison).context("serialise comparison")?);
    eprintln!("wrote {} and {}", out.join("compare.json").display(), out.join("compare.md").display());
    Ok(ExitCode::SUCCESS)
}
