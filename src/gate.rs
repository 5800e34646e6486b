//! CI regression gates: compare a run's metrics with a committed baseline
//! under per-metric rules (direction and tolerance). The CLI prints the table
//! and turns the verdict into exit codes (0 pass, 1 regression, 2 error).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::rundir::RunDir;

pub mod ci;

/// Which way a metric may move without failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Higher is better: fail when it drops by more than the tolerance.
    Higher,
    /// Lower is better: fail when it rises by more than the tolerance.
    Lower,
    /// Fail when it moves either way by more than the tolerance.
    Both,
}

/// One metric's rule. The allowed change is `max(abs_tol, rel_tol × |baseline|)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub direction: Direction,
    #[serde(default)]
    pub abs_tol: f64,
    #[serde(default)]
    pub rel_tol: f64,
}

impl Rule {
    pub fn allowed(&self, baseline: f64) -> f64 {
        self.abs_tol.max(self.rel_tol * baseline.abs())
    }

    pub fn describe(&self) -> String {
        let dir = match self.direction {
            Direction::Higher => "higher is better",
            Direction::Lower => "lower is better",
            Direction::Both => "stable",
        };
        let mut tol = Vec::new();
        if self.abs_tol > 0.0 {
            tol.push(format!("±{}", self.abs_tol));
        }
        if self.rel_tol > 0.0 {
            tol.push(format!("±{}%", self.rel_tol * 100.0));
        }
        if tol.is_empty() {
            tol.push("exact".into());
        }
        format!("{dir}, {}", tol.join(" or "))
    }

    /// True when `now` is acceptable against `baseline`.
    pub fn passes(&self, baseline: f64, now: f64) -> bool {
        let allowed = self.allowed(baseline) + 1e-12;
        match self.direction {
            Direction::Higher => now >= baseline - allowed,
            Direction::Lower => now <= baseline + allowed,
            Direction::Both => (now - baseline).abs() <= allowed,
        }
    }
}

/// The rules file: `[metrics.<name>]` tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    pub metrics: BTreeMap<String, Rule>,
}

impl Default for Rules {
    fn default() -> Self {
        let r = |direction, abs_tol, rel_tol| Rule { direction, abs_tol, rel_tol };
        Rules {
            metrics: BTreeMap::from([
                ("fact_density".to_string(), r(Direction::Both, 0.0, 0.10)),
                ("dedup_rate".to_string(), r(Direction::Both, 0.05, 0.0)),
                ("turn_f1".to_string(), r(Direction::Higher, 0.02, 0.0)),
                ("content_f1".to_string(), r(Direction::Higher, 0.02, 0.0)),
                ("noise_rejection_rate".to_string(), r(Direction::Both, 0.05, 0.0)),
                ("warnings".to_string(), r(Direction::Lower, 2.0, 0.10)),
                ("qa_recall_any_at_5".to_string(), r(Direction::Higher, 0.02, 0.0)),
            ]),
        }
    }
}

impl Rules {
    pub fn from_toml_file(path: &Path) -> Result<Rules> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        crate::error::reject_bom(path, text.as_bytes())?;
        let rules: Rules = toml::from_str(&text).map_err(|e| Error::input(path, e.message().to_string()))?;
        rules.validate().map_err(|m| Error::input(path, m))?;
        Ok(rules)
    }

    /// Every tolerance a finite number within [0, MAX_TOLERANCE].
    pub fn validate(&self) -> std::result::Result<(), String> {
        for (metric, rule) in &self.metrics {
            for (name, v) in [("abs_tol", rule.abs_tol), ("rel_tol", rule.rel_tol)] {
                if !(0.0..=MAX_TOLERANCE).contains(&v) {
                    return Err(format!("metrics.{metric}.{name} = {v:?}: must be within [0.0, {MAX_TOLERANCE:?}]"));
                }
            }
        }
        Ok(())
    }
}

/// The largest tolerance a rule may give (absolute, or relative as a fraction).
pub const MAX_TOLERANCE: f64 = 1e12;

/// A committed baseline: per mode (the per-stage modes, with the profile
/// first when it is not the default: `rules`, `gold/rules`, `signet:llm`),
/// the metrics of a reference run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub format: String,
    pub dataset: BaselineDataset,
    /// Mode (`rules`, `llm`) → metric → value.
    pub modes: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// Mode → what its reference run was (profile, modes, embedder,
    /// config, dataset, memform's version); missing in a baseline written
    /// by an older memform.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provenance: BTreeMap<String, Provenance>,
}

/// What a baseline entry was measured with, so that the gate can say what
/// differs when a run is compared with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub profile: String,
    /// The per-stage modes (`rules`, `gold/rules`, `llm`).
    pub modes: String,
    pub embedder: String,
    /// SHA-256 of the whole config (canonical JSON).
    pub config_digest: String,
    /// The keys whose value is not the default, as `key = value`
    /// (a section's as `section.key = value`).
    pub config_changes: Vec<String>,
    pub dataset_digest: String,
    pub memform_version: String,
}

impl Provenance {
    /// The provenance of a run from its `run.json`.
    pub fn of_manifest(manifest: &serde_json::Value) -> Provenance {
        let text = |k: &str| manifest.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let config = manifest.get("config").cloned().unwrap_or(serde_json::Value::Null);
        let canonical = crate::report::normalised_config(&config);
        Provenance {
            profile: manifest.get("profile").and_then(|v| v.as_str()).unwrap_or(crate::pipeline::profiles::DEFAULT).to_string(),
            modes: text("mode"),
            embedder: text("embedder"),
            config_digest: crate::normalize::sha256_hex(canonical.to_string().as_bytes()),
            config_changes: crate::report::config_changes(&config).iter().map(|c| c.trim_matches('`').to_string()).collect(),
            dataset_digest: manifest.pointer("/dataset/digest").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
            memform_version: text("memform_version"),
        }
    }

    /// What differs from `base` (the baseline's), one line each, naming
    /// the field or config key: `embedder: baseline X, run Y`,
    /// `config soda.near_dup_threshold: baseline default, run 0.9`.
    pub fn differences(&self, base: &Provenance) -> Vec<String> {
        let mut out = Vec::new();
        for (name, b, r) in [
            ("profile", &base.profile, &self.profile),
            ("modes", &base.modes, &self.modes),
            ("embedder", &base.embedder, &self.embedder),
            ("dataset digest", &base.dataset_digest, &self.dataset_digest),
            ("memform version", &base.memform_version, &self.memform_version),
        ] {
            if b != r {
                out.push(format!("{name}: baseline {b}, run {r}"));
            }
        }
        let split = |changes: &[String]| -> BTreeMap<String, String> {
            changes
                .iter()
                .map(|c| match c.split_once(" = ") {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (c.clone(), String::new()),
                })
                .collect()
        };
        let (b, r) = (split(&base.config_changes), split(&self.config_changes));
        let keys: std::collections::BTreeSet<&String> = b.keys().chain(r.keys()).collect();
        let mut named = false;
        for k in keys {
            let (bv, rv) = (b.get(k), r.get(k));
            if bv != rv {
                named = true;
                let show = |v: Option<&String>| v.map_or_else(|| "default".to_string(), Clone::clone);
                out.push(format!("config {k}: baseline {}, run {}", show(bv), show(rv)));
            }
        }
        if !named && base.config_digest != self.config_digest {
            out.push(format!("config digest: baseline {}, run {}", short(&base.config_digest), short(&self.config_digest)));
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineDataset {
    pub name: String,
    pub digest: String,
}

pub const BASELINE_FORMAT: &str = "memform-baseline/1";

/// What the gate needs of a run directory.
#[derive(Debug, Clone)]
pub struct RunMetrics {
    pub mode: String,
    pub dataset_name: String,
    pub dataset_digest: String,
    pub metrics: BTreeMap<String, serde_json::Value>,
    /// What the run was (profile, modes, embedder, config, …).
    pub provenance: Provenance,
    /// What a reader of its figures must know first ([`crate::report::caveats::of_run`]).
    pub caveats: Vec<String>,
}

/// Reads `run.json` and `summary.json` of a run directory; an incomplete
/// run (killed, or still moving into place) is an error.
pub fn read_run(dir: &Path) -> Result<RunMetrics> {
    let run_dir = RunDir::new(dir);
    let manifest_path = run_dir.file(RunDir::MANIFEST);
    run_dir.read_complete(|manifest| {
        let field =
            |ptr: &str| {
                manifest.pointer(ptr).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| {
                    Error::input(&manifest_path, format!("{}: missing field", ptr.trim_start_matches('/').replace('/', ".")))
                })
            };
        // The baseline key: the per-stage modes (`rules`, `gold/rules`, …),
        // prefixed with the profile when it is not the default (`signet:rules`).
        let mode = match manifest.pointer("/profile").and_then(|v| v.as_str()) {
            Some(p) if p != crate::pipeline::profiles::DEFAULT => format!("{p}:{}", field("/mode")?),
            _ => field("/mode")?,
        };
        let dataset_name = field("/dataset/name")?;
        let dataset_digest = field("/dataset/digest")?;
        let summary_path = run_dir.file(RunDir::SUMMARY);
        let summary = run_dir.read_summary()?;
        let metrics = summary
            .get("metrics")
            .and_then(|m| m.as_object())
            .ok_or_else(|| Error::input(&summary_path, "metrics: missing field"))?
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(RunMetrics {
            mode,
            dataset_name,
            dataset_digest,
            metrics,
            provenance: Provenance::of_manifest(manifest),
            caveats: crate::report::caveats::of_run(manifest),
        })
    })
}

pub fn read_baseline(path: &Path) -> Result<Baseline> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::input(
            path,
            format!(
                "no such baseline; make it from a run with `memform gate --update-baseline --baseline {} --run RUN_DIR`",
                path.display()
            ),
        ),
        _ => Error::io(path, e),
    })?;
    crate::error::reject_bom(path, text.as_bytes())?;
    let b: Baseline =
        serde_json::from_str(&text).map_err(|e| Error::input(path, format!("line {} column {}: {e}", e.line(), e.column())))?;
    if b.format != BASELINE_FORMAT {
        return Err(Error::input(path, format!("format: expected {BASELINE_FORMAT:?}, found {:?}", b.format)));
    }
    Ok(b)
}

/// Writes (or updates) `path` with `run`'s metrics under its mode, keeping
/// every other mode; a run of another dataset is refused (see
/// [`update_baseline_checked`] to force it).
pub fn update_baseline(path: &Path, run: &RunMetrics) -> Result<Baseline> {
    update_baseline_checked(path, run, false).map(|u| u.baseline)
}

/// What an update did.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineUpdate {
    pub baseline: Baseline,
    /// Modes already in the file and left as they were.
    pub kept_modes: Vec<String>,
    /// `name (digest)` of the dataset the baseline named before a forced update to another.
    pub replaced_dataset: Option<String>,
    /// Modes dropped by a forced update to another dataset: their numbers
    /// were of the old dataset and must not stand under the new one's name.
    pub dropped_modes: Vec<String>,
    /// What the replaced entry's run differs in from the accepted run
    /// ([`Provenance::differences`]); `None` when the mode is new or its
    /// entry recorded no provenance.
    pub accepted: Option<Vec<String>>,
}

/// Writes (or updates) `path` with `run`'s metrics under its mode. Only
/// that mode's entry is replaced: every other mode is kept as it was. A
/// baseline made on another dataset (digest) is an error unless `force`,
/// which re-points it to the run's dataset and drops every other mode (their
/// numbers are of the old dataset; [`BaselineUpdate::dropped_modes`]). The file is
/// replaced atomically (written beside it, then renamed).
pub fn update_baseline_checked(path: &Path, run: &RunMetrics, force: bool) -> Result<BaselineUpdate> {
    let mut modes = BTreeMap::new();
    let mut provenance = BTreeMap::new();
    let mut replaced_dataset = None;
    let mut dropped_modes = Vec::new();
    let mut accepted = None;
    if path.exists() {
        let old = read_baseline(path)?;
        modes = old.modes;
        provenance = old.provenance;
        accepted = provenance.get(&run.mode).map(|p| run.provenance.differences(p));
        if old.dataset.digest != run.dataset_digest {
            if !force {
                return Err(Error::input(
                    path,
                    format!(
                        "dataset.digest: the baseline is of {} ({}), the run is of {} ({}); pass --force to re-point the baseline to the run's dataset",
                        old.dataset.name,
                        short(&old.dataset.digest),
                        run.dataset_name,
                        short(&run.dataset_digest)
                    ),
                ));
            }
            replaced_dataset = Some(format!("{} ({})", old.dataset.name, short(&old.dataset.digest)));
            dropped_modes = modes.keys().filter(|m| **m != run.mode).cloned().collect();
            modes.clear();
            provenance.clear();
        }
    }
    let kept_modes = modes.keys().filter(|m| **m != run.mode).cloned().collect();
    modes.insert(run.mode.clone(), run.metrics.clone());
    provenance.insert(run.mode.clone(), run.provenance.clone());
    let b = Baseline {
        format: BASELINE_FORMAT.to_string(),
        dataset: BaselineDataset { name: run.dataset_name.clone(), digest: run.dataset_digest.clone() },
        modes,
        provenance,
    };
    let mut text = serde_json::to_string_pretty(&b).map_err(|e| Error::Other(format!("serialise baseline: {e}")))?;
    text.push('\n');
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| Error::write(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::write(path, e))?;
    Ok(BaselineUpdate { baseline: b, kept_modes, replaced_dataset, dropped_modes, accepted })
}

/// One row of the gate's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateRow {
    pub metric: String,
    pub baseline: f64,
    pub now: f64,
    pub delta: f64,
    pub rule: String,
    pub pass: bool,
    pub direction: Direction,
    /// The change the rule allows at this baseline value.
    pub allowed: f64,
}

/// Checks `run` against `baseline` under `rules`. Errors (exit 2): the run's
/// The first 12 characters of a digest (whole characters: a digest read
/// from a hand-edited file may hold any text).
fn short(digest: &str) -> String {
    digest.chars().take(12).collect()
}

/// mode is not in the baseline, a ruled metric is missing or not a number,
/// the dataset digest differs (unless allowed).
pub fn check(
    baseline: &Baseline,
    baseline_path: &Path,
    run: &RunMetrics,
    rules: &Rules,
    allow_dataset_change: bool,
) -> Result<Vec<GateRow>> {
    if baseline.dataset.digest != run.dataset_digest && !allow_dataset_change {
        return Err(Error::input(
            baseline_path,
            format!(
                "dataset.digest: baseline was made on {} ({}), the run is on {} ({}); pass --allow-dataset-change to compare anyway",
                baseline.dataset.name,
                short(&baseline.dataset.digest),
                run.dataset_name,
                short(&run.dataset_digest)
            ),
        ));
    }
    let base = baseline
        .modes
        .get(&run.mode)
        .ok_or_else(|| Error::input(baseline_path, format!("modes.{}: missing (the run is in {} mode)", run.mode, run.mode)))?;
    let mut rows = Vec::new();
    let hint = |metric: &str| {
        crate::config::did_you_mean(metric, run.metrics.keys().map(String::as_str))
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default()
    };
    for (metric, rule) in &rules.metrics {
        let b = base
            .get(metric)
            .and_then(|v| v.as_f64())
            .ok_or_else(|| Error::input(baseline_path, format!("modes.{}.{metric}: missing or not a number{}", run.mode, hint(metric))))?;
        let n = run
            .metrics
            .get(metric)
            .and_then(|v| v.as_f64())
            .ok_or_else(|| Error::Other(format!("run summary.json: metrics.{metric}: missing or not a number{}", hint(metric))))?;
        rows.push(GateRow {
            metric: metric.clone(),
            baseline: b,
            now: n,
            delta: n - b,
            rule: rule.describe(),
            pass: rule.passes(b, n),
            direction: rule.direction,
            allowed: rule.allowed(b),
        });
    }
    Ok(rows)
}

/// The table as Markdown-style text.
pub fn render_table(rows: &[GateRow]) -> String {
    let mut lines = vec!["| metric | baseline | now | delta | rule | result |".to_string(), "|---|---:|---:|---:|---|---|".to_string()];
    for r in rows {
        lines.push(format!(
            "| {} | {} | {} | {:+} | {} | {} |",
            table_cell(&r.metric),
            fmt(r.baseline),
            fmt(r.now),
            (r.delta * 1e6).round() / 1e6,
            table_cell(&r.rule),
            if r.pass { "pass" } else { "FAIL" }
        ));
    }
    lines.join("\n") + "\n"
}

/// A Markdown table cell from a name read from a file (a metric, a rule):
/// `|` escaped, line breaks and other control characters as spaces, so a
/// tampered name cannot end the row or start a line of its own.
pub fn table_cell(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().replace('|', "\\|")
}

fn fmt(x: f64) -> String {
    let r = (x * 1e6).round() / 1e6;
    format!("{r}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_directions_and_tolerances() {
        let higher = Rule { direction: Direction::Higher, abs_tol: 0.02, rel_tol: 0.0 };
        assert!(higher.passes(0.5, 0.49));
        assert!(higher.passes(0.5, 0.9));
        assert!(!higher.passes(0.5, 0.47));
        let lower = Rule { direction: Direction::Lower, abs_tol: 2.0, rel_tol: 0.1 };
        assert!(lower.passes(50.0, 55.0));
        assert!(!lower.passes(50.0, 55.1));
        assert!(lower.passes(50.0, 0.0));
        let both = Rule { direction: Direction::Both, abs_tol: 0.0, rel_tol: 0.1 };
        assert!(both.passes(2.0, 2.2));
        assert!(!both.passes(2.0, 1.7));
        let exact = Rule { direction: Direction::Both, abs_tol: 0.0, rel_tol: 0.0 };
        assert!(exact.passes(3.0, 3.0) && !exact.passes(3.0, 3.0001));
    }

    fn run(metrics: &[(&str, f64)]) -> RunMetrics {
        RunMetrics {
            mode: "rules".into(),
            dataset_name: "d".into(),
            dataset_digest: "abc".into(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect(),
            provenance: Provenance::default(),
            caveats: Vec::new(),
        }
    }

    #[test]
    fn updating_refuses_another_dataset_keeps_other_modes_and_force_drops_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("baseline.json");
        let mut llm = run(&[("turn_f1", 0.4)]);
        llm.mode = "llm".into();
        update_baseline(&p, &run(&[("turn_f1", 0.5)])).unwrap();
        let u = update_baseline_checked(&p, &llm, false).unwrap();
        assert_eq!(u.kept_modes, ["rules"]);
        let before = std::fs::read_to_string(&p).unwrap();

        let mut other = run(&[("turn_f1", 0.9)]);
        other.dataset_name = "other".into();
        other.dataset_digest = "fff".into();
        let err = update_baseline_checked(&p, &other, false).unwrap_err().to_string();
        assert!(err.contains("baseline.json: dataset.digest") && err.contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), before, "a refused update writes nothing");

        let u = update_baseline_checked(&p, &other, true).unwrap();
        assert_eq!(u.replaced_dataset.as_deref(), Some("d (abc)"));
        assert!(u.kept_modes.is_empty());
        assert_eq!(u.dropped_modes, ["llm"]);
        let b = read_baseline(&p).unwrap();
        assert_eq!(b.dataset.digest, "fff");
        assert_eq!(b.modes["rules"]["turn_f1"], 0.9);
        assert!(!b.modes.contains_key("llm"), "the old dataset's llm numbers do not stand under the new dataset's name");
        assert!(!dir.path().join("baseline.json.tmp").exists());
    }

    #[test]
    fn rules_with_bad_tolerances_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rules.toml");
        for (body, want) in [
            ("[metrics.turn_f1]\ndirection = \"higher\"\nabs_tol = nan\n", "metrics.turn_f1.abs_tol = NaN"),
            ("[metrics.x]\ndirection = \"both\"\nrel_tol = -0.1\n", "metrics.x.rel_tol = -0.1"),
            ("[metrics.x]\ndirection = \"both\"\nabs_tol = inf\n", "metrics.x.abs_tol = inf"),
        ] {
            std::fs::write(&p, body).unwrap();
            let err = Rules::from_toml_file(&p).unwrap_err().to_string();
            assert!(err.contains("rules.toml: ") && err.contains(want) && err.contains("must be within"), "{err}");
        }
        assert!(Rules::default().validate().is_ok());
    }

    #[test]
    fn check_reports_regressions_and_errors() {
        let rules = Rules {
            metrics: BTreeMap::from([("turn_f1".to_string(), Rule { direction: Direction::Higher, abs_tol: 0.02, rel_tol: 0.0 })]),
        };
        let baseline = Baseline {
            format: BASELINE_FORMAT.into(),
            dataset: BaselineDataset { name: "d".into(), digest: "abc".into() },
            modes: BTreeMap::from([("rules".to_string(), run(&[("turn_f1", 0.5)]).metrics)]),
            provenance: BTreeMap::new(),
        };
        let p = Path::new("b.json");
        let rows = check(&baseline, p, &run(&[("turn_f1", 0.4)]), &rules, false).unwrap();
        assert!(!rows[0].pass);
        assert!((rows[0].delta + 0.1).abs() < 1e-9);
        assert!(check(&baseline, p, &run(&[("turn_f1", 0.49)]), &rules, false).unwrap()[0].pass);
        let err = check(&baseline, p, &run(&[("other", 1.0)]), &rules, false).unwrap_err().to_string();
        assert!(err.contains("metrics.turn_f1"), "{err}");
        let mut moved = run(&[("turn_f1", 0.5)]);
        moved.dataset_digest = "zzz".into();
        let err = check(&baseline, p, &moved, &rules, false).unwrap_err().to_string();
        assert!(err.contains("--allow-dataset-change"), "{err}");
        assert!(check(&baseline, p, &moved, &rules, true).is_ok());
        let mut llm = run(&[("turn_f1", 0.5)]);
        llm.mode = "llm".into();
        assert!(check(&baseline, p, &llm, &rules, false).unwrap_err().to_string().contains("modes.llm"));
    }
}
