//! CI regression gates: compare a run's metrics with a committed baseline
//! under per-metric rules (direction and tolerance). The CLI prints the table
//! and turns the verdict into exit codes (0 pass, 1 regression, 2 error).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::rundir::RunDir;

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
            ]),
        }
    }
}

impl Rules {
    pub fn from_toml_file(path: &Path) -> Result<Rules> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        toml::from_str(&text).map_err(|e| Error::input(path, e.message().to_string()))
    }
}

/// A committed baseline: per mode, the metrics of a reference run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub format: String,
    pub dataset: BaselineDataset,
    /// Mode (`rules`, `llm`) → metric → value.
    pub modes: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
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
}

/// Reads `run.json` and `summary.json` of a run directory; an incomplete
/// run (killed, or still moving into place) is an error.
pub fn read_run(dir: &Path) -> Result<RunMetrics> {
    let run_dir = RunDir::new(dir);
    let manifest_path = run_dir.file(RunDir::MANIFEST);
    run_dir.read_complete(|manifest| {
        let field = |ptr: &str| {
            manifest
                .pointer(ptr)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| Error::input(&manifest_path, format!("{}: missing field", ptr.trim_start_matches('/').replace('/', "."))))
        };
        let mode = field("/mode")?;
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
        Ok(RunMetrics { mode, dataset_name, dataset_digest, metrics })
    })
}

pub fn read_baseline(path: &Path) -> Result<Baseline> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let b: Baseline =
        serde_json::from_str(&text).map_err(|e| Error::input(path, format!("line {} column {}: {e}", e.line(), e.column())))?;
    if b.format != BASELINE_FORMAT {
        return Err(Error::input(path, format!("format: expected {BASELINE_FORMAT:?}, found {:?}", b.format)));
    }
    Ok(b)
}

/// Writes (or updates) `path` with `run`'s metrics under its mode. Other
/// modes already in the file are kept when the dataset digest matches.
pub fn update_baseline(path: &Path, run: &RunMetrics) -> Result<Baseline> {
    let mut modes = BTreeMap::new();
    if path.exists() {
        let old = read_baseline(path)?;
        if old.dataset.digest == run.dataset_digest {
            modes = old.modes;
        }
    }
    modes.insert(run.mode.clone(), run.metrics.clone());
    let b = Baseline {
        format: BASELINE_FORMAT.to_string(),
        dataset: BaselineDataset { name: run.dataset_name.clone(), digest: run.dataset_digest.clone() },
        modes,
    };
    let mut text = serde_json::to_string_pretty(&b).map_err(|e| Error::Other(format!("serialise baseline: {e}")))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::write(path, e))?;
    Ok(b)
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
}

/// Checks `run` against `baseline` under `rules`. Errors (exit 2): the run's
/// The first 12 characters of a digest (whole characters: a digest read
/// from a hand-edited file may hold any text).
fn short(digest: &str) -> String {
    digest.chars().take(12).collect()
}

/// mode is not in the baseline, a ruled metric is missing or not a number,
/// the dataset digest differs (unless allowed).
pub fn check(baseline: &Baseline, baseline_path: &Path, run: &RunMetrics, rules: &Rules, allow_dataset_change: bool) -> Result<Vec<GateRow>> {
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
    for (metric, rule) in &rules.metrics {
        let b = base
            .get(metric)
            .and_then(|v| v.as_f64())
            .ok_or_else(|| Error::input(baseline_path, format!("modes.{}.{metric}: missing or not a number", run.mode)))?;
        let n = run
            .metrics
            .get(metric)
            .and_then(|v| v.as_f64())
            .ok_or_else(|| Error::Other(format!("run summary.json: metrics.{metric}: missing or not a number")))?;
        rows.push(GateRow { metric: metric.clone(), baseline: b, now: n, delta: n - b, rule: rule.describe(), pass: rule.passes(b, n) });
    }
    Ok(rows)
}

/// The table as Markdown-style text.
pub fn render_table(rows: &[GateRow]) -> String {
    let mut lines = vec![
        "| metric | baseline | now | delta | rule | result |".to_string(),
        "|---|---:|---:|---:|---|---|".to_string(),
    ];
    for r in rows {
        lines.push(format!(
            "| {} | {} | {} | {:+} | {} | {} |",
            r.metric,
            fmt(r.baseline),
            fmt(r.now),
            (r.delta * 1e6).round() / 1e6,
            r.rule,
            if r.pass { "pass" } else { "FAIL" }
        ));
    }
    lines.join("\n") + "\n"
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
        }
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
