//! The `memform` command line: the only place that prints. stdout carries
//! machine-readable output only; progress and errors go to stderr.
//! Exit codes: [`exit_code`] (0 ok, 1 a gate failed, 2 an error).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use memform::config::{Config, WriteMode};
use memform::embed::cache::EmbedMode;
use memform::embed::{Embedder, EmbedderKind, EmbedderSpec, build_embedder};
use memform::error::exit_code;
use memform::llm::fixtures::{RecordedLlm, default_fixtures_dir};
use memform::llm::{LlmMode, LlmSettings};
use memform::pipeline::extract::{Extractor, LlmExtractor};
use memform::pipeline::judge::{Judge, LlmJudge};
use memform::pipeline::{Stages, profiles};
use memform::run::{Progress, RunOptions, Skipped, run};
use memform::rundir::{Manifest, Recorded};
use memform::types::{Dataset, DatasetFormat, Warning};

/// Fault injection for the kill-and-rerun test: abort the process right
/// after this many episode write transactions have committed.
const FAULT_ABORT_ENV: &str = "MEMFORM_FAULT_ABORT_AFTER_WRITES";
/// For the concurrent-runs test: a run holds (with its directory's lock) at
/// its start until this file exists (at most a minute).
const FAULT_HOLD_ENV: &str = "MEMFORM_FAULT_HOLD_UNTIL";

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
    /// Compare a run's metrics with a baseline: exit 0 pass, 1 regression, 2 error.
    Gate(GateArgs),
    /// Sweep config keys over a grid, sharing extraction and embeddings across points.
    Sweep(SweepArgs),
    /// Recorded LLM answers: `fixtures check` lists missing and unused fixtures.
    Fixtures {
        #[command(subcommand)]
        command: FixturesCommand,
    },
    /// Run (or reuse) two configurations on one dataset and compare them: compare.json, compare.md.
    Compare(CompareArgs),
    /// List the pipeline profiles (`--profile NAME`), one line each.
    Profiles,
}

/// The configuration every command that runs the pipeline takes.
#[derive(clap::Args, Clone)]
struct ConfigArgs {
    /// TOML file of config overrides.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one config key (repeatable): --set near_dup_threshold=0.9
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The pipeline profile (`memform profiles` lists them); overrides the config's `profile`.
    #[arg(long)]
    profile: Option<String>,
}

impl ConfigArgs {
    /// Defaults, then the file, then `--set`s, then `--profile`; not yet validated.
    fn load(&self) -> Result<Config> {
        let mut cfg = match &self.config {
            Some(p) => Config::from_toml_file(p)?,
            None => Config::default(),
        };
        for s in &self.set {
            cfg.set(s)?;
        }
        if let Some(p) = &self.profile {
            cfg.profile = profiles::by_name(p)?.name().to_string();
        }
        Ok(cfg)
    }
}

#[derive(Subcommand)]
enum FixturesCommand {
    /// Replay a dataset in LLM mode without failing on misses, then list the
    /// fixtures it needed but lacks and those it did not need. Exit 1 when
    /// anything is missing, unused or unreadable.
    Check {
        #[arg(long)]
        dataset: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        stage: StageArgs,
    },
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct SweepArgs {
    #[command(subcommand)]
    merge: Option<SweepCommand>,
    /// Dataset directory.
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// KEY=START:STOP:STEP (inclusive) or KEY=v1,v2,… (repeatable; axes multiply).
    #[arg(long = "grid", value_name = "SPEC")]
    grid: Vec<String>,
    #[arg(long, value_enum, default_value = "rules")]
    mode: Mode,
    /// The metric the best point maximises.
    #[arg(long, default_value = "turn_f1")]
    objective: String,
    /// The two metrics of the Pareto front (both higher-is-better).
    #[arg(long, default_value = "content_precision,content_recall")]
    pareto: String,
    #[command(flatten)]
    config: ConfigArgs,
    /// Output directory (default: reports/<dataset>-sweep).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only slice K of N (0-based), e.g. from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID.
    #[arg(long)]
    shard: Option<String>,
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    stage: StageArgs,
}

#[derive(Subcommand)]
enum SweepCommand {
    /// Join shard outputs into the files an unsharded sweep writes.
    Merge {
        /// Shard output directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct GateArgs {
    /// Baseline file (memform-baseline/1 JSON).
    #[arg(long)]
    baseline: PathBuf,
    /// Run directory (holds run.json and summary.json).
    #[arg(long)]
    run: PathBuf,
    /// TOML rules (`[metrics.NAME] direction = "higher"|"lower"|"both", abs_tol, rel_tol`); default rules otherwise.
    #[arg(long)]
    rules: Option<PathBuf>,
    /// Compare even when the run's dataset digest differs from the baseline's.
    #[arg(long)]
    allow_dataset_change: bool,
    /// Write the run's metrics into the baseline (under its mode) instead of checking.
    #[arg(long)]
    update_baseline: bool,
}

#[derive(clap::Args)]
struct CompareArgs {
    /// Dataset directory (native format or LoCoMo JSON; detected).
    #[arg(long)]
    dataset: PathBuf,
    /// The two modes, A then B; the uplift is B − A (`rules,rules` with --set-b compares two configs).
    #[arg(long, default_value = "rules,llm")]
    modes: String,
    /// The config for both runs.
    #[command(flatten)]
    config: ConfigArgs,
    /// Override one config key for run A only (repeatable).
    #[arg(long = "set-a", value_name = "KEY=VALUE")]
    set_a: Vec<String>,
    /// Override one config key for run B only (repeatable).
    #[arg(long = "set-b", value_name = "KEY=VALUE")]
    set_b: Vec<String>,
    /// The write mode of both runs.
    #[arg(long, value_enum, default_value = "full")]
    write_mode: WriteMode,
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
    #[command(flatten)]
    stage: StageArgs,
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
    #[arg(long, value_enum, default_value = "full")]
    write_mode: WriteMode,
    #[command(flatten)]
    config: ConfigArgs,
    /// Output directory (default: reports/<dataset>-<mode>). Its previous run files are replaced.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Skip a conversation that fails, count it, and exit 2 at the end.
    #[arg(long)]
    keep_going: bool,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    stage: StageArgs,
}

/// How stages are built: embedder and LLM boundary.
#[derive(clap::Args, Clone)]
struct StageArgs {
    /// hashed | minilm | ollama | openai (default: the config's `embedder`, hashed).
    #[arg(long)]
    embedder: Option<String>,
    /// replay | record | live: recorded embedding vectors (replay needs no model).
    #[arg(long, default_value = "replay")]
    embed: String,
    /// MiniLM model directory (`make models` fills models/all-MiniLM-L6-v2).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Base URL of an HTTP embedder.
    #[arg(long)]
    embed_url: Option<String>,
    /// Model name sent to an HTTP embedder.
    #[arg(long)]
    embed_model: Option<String>,
    /// Dimensions of an HTTP embedder's vectors.
    #[arg(long)]
    embed_dims: Option<usize>,
    /// Embedding cache directory (default: DATASET/embeddings; for LoCoMo, locomo-fixtures/<name>/embeddings).
    #[arg(long)]
    embed_cache: Option<PathBuf>,
    /// replay | record | live: recorded LLM answers (llm mode).
    #[arg(long, default_value = "replay")]
    llm: String,
    /// Fixture directory (default: DATASET/fixtures/<model>; for LoCoMo, locomo-fixtures/<name>/fixtures/<model>).
    #[arg(long)]
    fixtures: Option<PathBuf>,
}

/// The stages of a run, owned, with what the manifest says about them.
struct Built {
    extractor: Box<dyn Extractor>,
    embedder: Box<dyn Embedder>,
    judge: Box<dyn Judge>,
    llm: Option<Arc<RecordedLlm>>,
    recorded: Recorded,
}

impl Built {
    fn stages(&self) -> Stages<'_> {
        Stages { extractor: self.extractor.as_ref(), embedder: self.embedder.as_ref(), judge: self.judge.as_ref() }
    }
}

/// Where a dataset's recorded calls live: inside a native dataset, beside
/// the clone (git-ignored) for LoCoMo, whose directory is never written.
fn recorded_root(dataset_dir: &std::path::Path, dataset: &Dataset) -> PathBuf {
    match dataset.format {
        DatasetFormat::Native => dataset_dir.to_path_buf(),
        DatasetFormat::Locomo => PathBuf::from("locomo-fixtures").join(&dataset.name),
    }
}

fn build_stages(
    mode: Mode,
    args: &StageArgs,
    cfg: &mut Config,
    dataset_dir: &std::path::Path,
    dataset: &Dataset,
    llm_progress: Option<memform::llm::ProgressHook>,
) -> Result<Built> {
    if let Some(e) = &args.embedder {
        cfg.embedder = e.clone();
    }
    let root = recorded_root(dataset_dir, dataset);
    let mut spec = EmbedderSpec::new(cfg.embedder.parse::<EmbedderKind>()?);
    spec.mode = args.embed.parse::<EmbedMode>()?;
    if let Some(d) = &args.model_dir {
        spec.model_dir = d.clone();
    }
    spec.url = args.embed_url.clone();
    spec.model = args.embed_model.clone();
    spec.dims = match spec.kind {
        EmbedderKind::Hashed => Some(cfg.hashed_dims),
        _ => args.embed_dims,
    };
    spec.cache_dir = Some(args.embed_cache.clone().unwrap_or_else(|| root.join("embeddings")));
    let embedder = build_embedder(&spec)?;
    let mut recorded = Recorded { embed_mode: Some(spec.mode.as_str().to_string()), ..Recorded::default() };
    let profile = profiles::by_name(&cfg.profile)?;
    let (extractor, judge, llm): (Box<dyn Extractor>, Box<dyn Judge>, _) = match mode {
        Mode::Rules => (profile.rules_extractor(cfg), profile.rules_judge(cfg), None),
        Mode::Llm => {
            let settings = LlmSettings::from_config_and_env(cfg)?;
            let llm_mode = LlmMode::parse(&args.llm)?;
            let dir = args.fixtures.clone().unwrap_or_else(|| default_fixtures_dir(&root, &settings.model));
            let mut boundary = RecordedLlm::from_settings(&settings, llm_mode, Some(dir.clone()))?;
            if let Some(hook) = llm_progress {
                boundary = boundary.with_progress(hook);
            }
            let boundary = Arc::new(boundary);
            let templates: Vec<String> = memform::llm::prompts::all_templates()?
                .iter()
                .map(|t| format!("{} v{}", t.id.name, t.id.version))
                .collect();
            recorded.llm_mode = Some(llm_mode.as_str().to_string());
            recorded.llm = Some(settings.clone());
            recorded.fixtures_dir = Some(dir.display().to_string());
            recorded.prompt_templates = Some(templates);
            (
                Box::new(LlmExtractor::new(boundary.clone(), &settings)?),
                Box::new(LlmJudge::new(boundary.clone(), &settings)?),
                Some(boundary),
            )
        }
    };
    Ok(Built { extractor, embedder, judge, llm, recorded })
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Rules => "rules",
        Mode::Llm => "llm",
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", chain(&e));
            ExitCode::from(exit_code::ERROR)
        }
    }
}

fn chain(e: &anyhow::Error) -> String {
    e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Gate(args) => cmd_gate(args),
        Command::Sweep(args) => cmd_sweep(args),
        Command::Fixtures { command: FixturesCommand::Check { dataset, config, stage } } => {
            cmd_fixtures_check(&dataset, &config, &stage)
        }
        Command::Compare(args) => cmd_compare(args),
        Command::Profiles => {
            for p in profiles::PROFILES {
                println!("{:<8} {}", p.name(), p.summary());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Config => {
            print!("{}", toml::to_string_pretty(&Config::default()).context("serialise config")?);
            Ok(ExitCode::SUCCESS)
        }
    }
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
    let mut cfg = args.config.load()?;
    cfg.set_write_mode(args.write_mode);
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
        .map(|b| Skipped {
            conversation: b.path.file_stem().map_or_else(|| b.path.display().to_string(), |s| s.to_string_lossy().into_owned()),
            error: memform::error::chain(&b.error),
        })
        .collect();
    let mode = mode_name(args.mode);
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-{mode}", dataset.name)));
    let lock = Arc::new(memform::rundir::DirLock::acquire(&out)?);
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} episodes {elapsed} eta {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} {mode}", dataset.name));
    let llm_bar = bar.clone();
    let llm_hook: memform::llm::ProgressHook = Arc::new(move |p: &memform::llm::LlmProgress| {
        llm_bar.set_message(format!(
            "llm: {} live, {} replayed, {} prompt + {} completion tokens",
            p.live_calls, p.fixture_hits, p.prompt_tokens, p.completion_tokens
        ));
    });
    let built = build_stages(args.mode, &args.stage, &mut cfg, &args.dataset, &dataset, Some(llm_hook))?;
    let pb = bar.clone();
    let abort_after: Option<u64> = std::env::var(FAULT_ABORT_ENV).ok().and_then(|v| v.parse().ok());
    let hold_until: Option<PathBuf> = std::env::var_os(FAULT_HOLD_ENV).map(PathBuf::from);
    let opts = RunOptions {
        out_dir: out.clone(),
        threads: args.threads,
        keep_going: args.keep_going,
        skipped_inputs,
        progress: Some(Arc::new(move |p| match p {
            Progress::Start { episodes } => {
                pb.set_length(episodes as u64);
                if let Some(go) = &hold_until {
                    let since = std::time::Instant::now();
                    while !go.exists() && since.elapsed().as_secs() < 60 {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
            }
            Progress::Episode { .. } => {
                pb.inc(1);
                // An episode is reported once its write transaction committed.
                if abort_after.is_some_and(|n| pb.position() >= n) {
                    std::process::abort();
                }
            }
        })),
        recorded: built.recorded.clone(),
        dataset_path: Some(args.dataset.clone()),
        lock: Some(lock),
    };
    let output = run(&dataset, &cfg, built.stages(), &opts);
    bar.finish_and_clear();
    built.embedder.flush()?;
    let output = output?;
    if let Some(llm) = &built.llm {
        let t = llm.totals();
        eprintln!(
            "llm: {} live calls ({:.1} s), {} replayed; {} prompt + {} completion tokens",
            t.live_calls,
            t.live_wall.as_secs_f64(),
            t.fixture_hits,
            t.prompt_tokens,
            t.completion_tokens
        );
    }
    if let Some(stats) = built.embedder.cache_stats() {
        eprintln!(
            "embeddings ({}): {} cached, {} hits, {} recorded, in {}",
            stats.mode.as_str(),
            stats.entries,
            stats.hits,
            stats.recorded,
            stats.dir.display()
        );
    }
    println!("{}", serde_json::to_string_pretty(&output.summary).context("serialise summary")?);
    eprintln!("wrote {}", output.out_dir.display());
    if !output.skipped.is_empty() {
        for s in &output.skipped {
            eprintln!("error: skipped conversation {}: {}", s.conversation, s.error);
        }
        return Ok(ExitCode::from(exit_code::ERROR));
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_gate(args: GateArgs) -> Result<ExitCode> {
    let run = memform::gate::read_run(&args.run)?;
    if args.update_baseline {
        memform::gate::update_baseline(&args.baseline, &run)?;
        eprintln!("updated {} ({} mode)", args.baseline.display(), run.mode);
        return Ok(ExitCode::SUCCESS);
    }
    let rules = match &args.rules {
        Some(p) => memform::gate::Rules::from_toml_file(p)?,
        None => memform::gate::Rules::default(),
    };
    let baseline = memform::gate::read_baseline(&args.baseline)?;
    let rows = memform::gate::check(&baseline, &args.baseline, &run, &rules, args.allow_dataset_change)?;
    print!("{}", memform::gate::render_table(&rows));
    let failed = rows.iter().filter(|r| !r.pass).count();
    if failed > 0 {
        eprintln!("gate failed: {failed} of {} metrics regressed ({} mode, {})", rows.len(), run.mode, args.run.display());
        Ok(ExitCode::from(exit_code::FAILED))
    } else {
        eprintln!("gate passed: {} metrics ({} mode)", rows.len(), run.mode);
        Ok(ExitCode::SUCCESS)
    }
}

/// What `sweep.md` needs to be rewritten by `merge`: kept beside the rows.
#[derive(serde::Serialize, serde::Deserialize)]
struct SweepMeta {
    dataset: String,
    mode: String,
    objective: String,
    pareto_x: String,
    pareto_y: String,
    defaults: Vec<(String, String)>,
    grid: Vec<String>,
}

fn write_sweep(dir: &std::path::Path, rows: &[memform::sweep::Row], meta: &SweepMeta) -> Result<()> {
    let report = memform::sweep::SweepReport {
        dataset: &meta.dataset,
        mode: &meta.mode,
        objective: &meta.objective,
        pareto_x: &meta.pareto_x,
        pareto_y: &meta.pareto_y,
        defaults: meta.defaults.clone(),
    };
    memform::sweep::write_outputs(dir, rows, &report)?;
    memform::rundir::write_json(&dir.join("sweep.json"), meta)?;
    Ok(())
}

fn cmd_sweep(args: SweepArgs) -> Result<ExitCode> {
    if let Some(SweepCommand::Merge { dirs, out }) = args.merge {
        let metas: Vec<SweepMeta> = dirs
            .iter()
            .map(|d| {
                let p = d.join("sweep.json");
                let text = std::fs::read_to_string(&p).with_context(|| format!("read {}", p.display()))?;
                serde_json::from_str(&text).with_context(|| format!("parse {}", p.display()))
            })
            .collect::<Result<_>>()?;
        let Some(first) = metas.first() else { bail!("merge: no shard directories given") };
        if let Some((d, _)) = dirs.iter().zip(&metas).find(|(_, m)| m.grid != first.grid || m.dataset != first.dataset || m.mode != first.mode) {
            bail!("merge: {} was swept over another grid, dataset or mode than {}", d.display(), dirs[0].display());
        }
        let refs: Vec<&std::path::Path> = dirs.iter().map(PathBuf::as_path).collect();
        let rows = memform::sweep::read_rows(&refs)?;
        let _lock = memform::rundir::DirLock::acquire(&out)?;
        write_sweep(&out, &rows, first)?;
        eprintln!("merged {} points from {} shards into {}", rows.len(), dirs.len(), out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(dataset_dir) = args.dataset.clone() else { bail!("sweep: --dataset is required") };
    if args.grid.is_empty() {
        bail!("sweep: at least one --grid KEY=START:STOP:STEP or KEY=v1,v2 is required");
    }
    let cfg = args.config.load()?;
    cfg.validate()?;
    let axes = args.grid.iter().map(|g| memform::sweep::parse_axis(g)).collect::<Result<Vec<_>, _>>()?;
    let (px, py) = args.pareto.split_once(',').context("--pareto: expected METRIC_X,METRIC_Y")?;
    let all = memform::sweep::points(&axes);
    let total = all.len();
    let points = match &args.shard {
        Some(s) => {
            let (k, n) = memform::sweep::parse_shard(s)?;
            memform::sweep::shard(all, k, n)
        }
        None => all,
    };
    let dataset = memform::dataset::load(&dataset_dir)?;
    let cfg_value = serde_json::to_value(&cfg).context("serialise config")?;
    let defaults = axes
        .iter()
        .map(|a| (a.key.clone(), cfg_value.get(&a.key).map(|v| v.to_string()).unwrap_or_default()))
        .collect();
    let mode_name = mode_name(args.mode);
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-sweep", dataset.name)));
    let _lock = memform::rundir::DirLock::acquire(&out)?;
    let mut cfg = cfg;
    let built = build_stages(args.mode, &args.stage, &mut cfg, &dataset_dir, &dataset, None)?;
    let cfg = cfg;
    let stages = built.stages();
    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} sweep [{bar:30}] {pos}/{len} points {elapsed} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let pb = bar.clone();
    let done = move |_i: usize| pb.inc(1);
    let work = || memform::sweep::run_sweep(&dataset, &cfg, stages, &points, Some(&done));
    let (rows, shared) = match args.threads {
        Some(n) => rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().context("start threads")?.install(work)?,
        None => work()?,
    };
    bar.finish_and_clear();
    let meta = SweepMeta {
        dataset: dataset.name.clone(),
        mode: mode_name.to_string(),
        objective: args.objective.clone(),
        pareto_x: px.trim().to_string(),
        pareto_y: py.trim().to_string(),
        defaults,
        grid: args.grid.clone(),
    };
    write_sweep(&out, &rows, &meta)?;
    eprintln!(
        "swept {} of {total} points ({} front set(s), {} episode fronts computed once) into {}",
        rows.len(),
        shared.front_sets,
        shared.fronts_computed,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn cmd_fixtures_check(dataset_dir: &std::path::Path, config: &ConfigArgs, stage: &StageArgs) -> Result<ExitCode> {
    let mut cfg = config.load()?;
    cfg.validate()?;
    let dataset = memform::dataset::load(dataset_dir)?;
    let settings = LlmSettings::from_config_and_env(&cfg)?;
    let dir = stage.fixtures.clone().unwrap_or_else(|| default_fixtures_dir(&recorded_root(dataset_dir, &dataset), &settings.model));
    let boundary = Arc::new(RecordedLlm::replay(memform::llm::FixtureStore::new(&dir)).collecting_misses());
    let mut built = build_stages(Mode::Rules, stage, &mut cfg, dataset_dir, &dataset, None)?;
    built.extractor = Box::new(LlmExtractor::new(boundary.clone(), &settings)?);
    built.judge = Box::new(LlmJudge::new(boundary.clone(), &settings)?);
    let scratch = std::env::temp_dir().join(format!("memform-fixtures-check-{}", std::process::id()));
    let opts = RunOptions { out_dir: scratch.clone(), ..RunOptions::default() };
    let result = run(&dataset, &cfg, built.stages(), &opts);
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    let needed: std::collections::BTreeSet<String> = boundary.used_keys().union(&boundary.missed_keys()).cloned().collect();
    let check = memform::llm::fixtures::fixtures_check(&dir, &needed)?;
    println!("fixtures: {} ({} needed)", dir.display(), needed.len());
    for k in &check.missing {
        println!("missing {k}");
    }
    for k in &check.unused {
        println!("unused {k}");
    }
    for (p, why) in &check.invalid {
        println!("invalid {}: {why}", p.display());
    }
    if check.is_clean() {
        eprintln!("fixtures check: clean");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "fixtures check: {} missing, {} unused, {} invalid (re-record missing ones with `memform run --dataset {} --mode llm --llm record`)",
            check.missing.len(),
            check.unused.len(),
            check.invalid.len(),
            dataset_dir.display()
        );
        Ok(ExitCode::from(exit_code::FAILED))
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
        let mut cfg = args.config.load()?;
        for s in sets {
            cfg.set(s)?;
        }
        cfg.set_write_mode(args.write_mode);
        cfg.validate()?;
        let (label, slug) = side_label(mode, sets, args.stage.embedder.as_deref());
        let built = build_stages(mode, &args.stage, &mut cfg, &args.dataset, &dataset, None)?;
        sides.push((mode, cfg, label, runs_dir.join(format!("{}-{slug}", dataset.name)), built));
    }
    if sides[0].2 == sides[1].2 {
        bail!("both sides are {:?}: give two modes, or --set-a/--set-b to vary the config", sides[0].2);
    }
    let mut compared = Vec::new();
    // Both run directories stay locked until they are read.
    let mut locks = Vec::new();
    for (_, cfg, label, dir, built) in sides {
        let lock = Arc::new(memform::rundir::DirLock::acquire(&dir)?);
        locks.push(lock.clone());
        let stages = built.stages();
        // A run is reused when its manifest matches on everything but where the dataset was read from.
        let manifest = Manifest::new(&dataset, &cfg, stages, &built.recorded, None).to_value()?;
        let mut expected = manifest.as_object().cloned().unwrap_or_default();
        expected.remove("dataset");
        expected.insert("dataset.digest".into(), dataset.digest.clone().into());
        if !args.rerun && memform::compare::reusable(&dir, &expected) {
            eprintln!("reusing {} ({label}: its run.json matches)", dir.display());
        } else {
            eprintln!("running {label} into {}", dir.display());
            let opts = RunOptions {
                out_dir: dir.clone(),
                threads: args.threads,
                recorded: built.recorded.clone(),
                dataset_path: Some(args.dataset.clone()),
                lock: Some(lock),
                ..RunOptions::default()
            };
            let result = run(&dataset, &cfg, stages, &opts);
            built.embedder.flush()?;
            result.with_context(|| format!("run {label}"))?;
        }
        compared.push(memform::compare::Side { label, dir });
    }
    let opts = memform::compare::CompareOptions { resamples: args.resamples, seed: args.seed };
    let comparison = memform::compare::compare_runs(&compared[0], &compared[1], &out, opts)?;
    drop(locks);
    let _lock = memform::rundir::DirLock::acquire(&out)?;
    memform::compare::write_comparison(&out, &comparison)?;
    println!("{}", serde_json::to_string_pretty(&comparison).context("serialise comparison")?);
    eprintln!("wrote {} and {}", out.join("compare.json").display(), out.join("compare.md").display());
    Ok(ExitCode::SUCCESS)
}
