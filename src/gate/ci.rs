//! The gate's verdict in the forms CI systems read: JUnit XML (one test
//! suite per run, one test case per ruled metric; GitLab, Jenkins, GitHub
//! test-report actions), GitHub workflow annotations (`::error` for a
//! regression, `::warning` for a metric that improved beyond its tolerance
//! or a dataset change the gate was told to allow, `::notice` with the
//! count), and the Markdown step summary GitHub shows on the run's page.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{Baseline, Direction, GateRow, Rules, RunMetrics, check, fmt, read_run, render_table, table_cell};
use crate::error::{Error, Result};

/// One run checked against the baseline.
#[derive(Debug, Clone)]
pub struct GateRun {
    pub dir: PathBuf,
    pub run: RunMetrics,
    pub rows: Vec<GateRow>,
    /// The run's dataset digest differs from the baseline's (allowed by
    /// `--allow-dataset-change`, or [`check`] would have failed).
    pub dataset_changed: bool,
    /// What the run differs in from the baseline entry's run
    /// ([`crate::gate::Provenance::differences`]): profile, modes,
    /// embedder, config keys, dataset, memform's version.
    pub differs: Vec<String>,
    /// The baseline entry records no provenance (an older baseline).
    pub unknown_provenance: bool,
}

impl GateRun {
    pub fn failed(&self) -> usize {
        self.rows.iter().filter(|r| !r.pass).count()
    }

    /// One line naming what the run differs in from the baseline entry.
    pub fn differs_line(&self) -> String {
        format!("{} differs from the baseline's {} run in {}", self.dir.display(), self.run.mode, self.differs.join("; "))
    }

    /// `<dir> (<mode> mode)`: the suite's name.
    pub fn name(&self) -> String {
        format!("{} ({} mode)", self.dir.display(), self.run.mode)
    }
}

/// Reads the run in `dir` and checks it (see [`check`]).
pub fn gate_run(baseline: &Baseline, baseline_path: &Path, dir: &Path, rules: &Rules, allow_dataset_change: bool) -> Result<GateRun> {
    let run = read_run(dir)?;
    let rows = check(baseline, baseline_path, &run, rules, allow_dataset_change)?;
    let dataset_changed = baseline.dataset.digest != run.dataset_digest;
    let entry = baseline.provenance.get(&run.mode.clone());
    let differs = entry.map(|p| run.provenance.differences(p)).unwrap_or_default();
    Ok(GateRun { dir: dir.to_path_buf(), unknown_provenance: entry.is_none(), run, rows, dataset_changed, differs })
}

/// "metric: baseline B, run N (delta D); tolerance: RULE (allowed change A)".
pub fn describe(r: &GateRow) -> String {
    format!(
        "{}: baseline {}, run {} (delta {:+}); tolerance: {} (allowed change {})",
        r.metric,
        fmt(r.baseline),
        fmt(r.now),
        (r.delta * 1e6).round() / 1e6,
        r.rule,
        fmt(r.allowed)
    )
}

/// True when a passing metric moved the good way by more than its
/// tolerance: the baseline is stale and would hide a regression of that size.
pub fn improved_beyond(r: &GateRow) -> bool {
    let beyond = r.delta.abs() > r.allowed + 1e-12;
    r.pass
        && beyond
        && match r.direction {
            Direction::Higher => r.delta > 0.0,
            Direction::Lower => r.delta < 0.0,
            Direction::Both => false,
        }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The JUnit XML document: a `<testsuite>` per run, a `<testcase>` per
/// ruled metric, a `<failure>` (message: metric, baseline, run value,
/// tolerance) per regression.
pub fn junit_xml(runs: &[GateRun], baseline_path: &Path) -> String {
    let tests: usize = runs.iter().map(|r| r.rows.len()).sum();
    let failures: usize = runs.iter().map(GateRun::failed).sum();
    let mut o = String::new();
    let _ = writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(o, r#"<testsuites name="memform gate" tests="{tests}" failures="{failures}" errors="0" time="0">"#);
    for run in runs {
        let _ = writeln!(
            o,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="0" skipped="0" time="0">"#,
            xml_escape(&run.name()),
            run.rows.len(),
            run.failed()
        );
        let _ = writeln!(o, "    <properties>");
        for (k, v) in [
            ("run", run.dir.display().to_string()),
            ("mode", run.run.mode.clone()),
            ("dataset", run.run.dataset_name.clone()),
            ("dataset_digest", run.run.dataset_digest.clone()),
            ("baseline", baseline_path.display().to_string()),
        ] {
            let _ = writeln!(o, r#"      <property name="{k}" value="{}"/>"#, xml_escape(&v));
        }
        let _ = writeln!(o, "    </properties>");
        let classname = xml_escape(&format!("memform.gate.{}", run.run.mode));
        for r in &run.rows {
            let name = xml_escape(&r.metric);
            if r.pass {
                let _ = writeln!(o, r#"    <testcase classname="{classname}" name="{name}" time="0"/>"#);
            } else {
                let message = describe(r);
                let _ = writeln!(o, r#"    <testcase classname="{classname}" name="{name}" time="0">"#);
                let _ = writeln!(
                    o,
                    r#"      <failure type="regression" message="{}">{}&#10;run: {}</failure>"#,
                    xml_escape(&message),
                    xml_escape(&message),
                    xml_escape(&run.dir.display().to_string())
                );
                let _ = writeln!(o, "    </testcase>");
            }
        }
        let _ = writeln!(o, "  </testsuite>");
    }
    let _ = writeln!(o, "</testsuites>");
    o
}

/// Escapes a workflow command's message.
fn gh_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a workflow command's property value.
fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands, one line each: `::error` per
/// regression, `::warning` per metric improved beyond its tolerance and per
/// allowed dataset change, `::notice` with each run's count. `file` (the
/// baseline) is where the annotations point.
pub fn github_annotations(runs: &[GateRun], baseline_path: &Path) -> String {
    let file = gh_property(&baseline_path.display().to_string());
    let mut o = String::new();
    for run in runs {
        let mode = &run.run.mode;
        if !run.differs.is_empty() {
            let _ = writeln!(
                o,
                "::warning file={file},title={}::{}",
                gh_property(&format!("memform gate: the run differs from the baseline's ({mode} mode)")),
                gh_data(&run.differs_line())
            );
        }
        if run.dataset_changed {
            let _ = writeln!(
                o,
                "::warning file={file},title={}::{}",
                gh_property(&format!("memform gate: dataset changed ({mode} mode)")),
                gh_data(&format!(
                    "{} was made on another dataset ({}) than the baseline; compared anyway (--allow-dataset-change)",
                    run.dir.display(),
                    run.run.dataset_digest.chars().take(12).collect::<String>()
                ))
            );
        }
        for r in &run.rows {
            if !r.pass {
                let _ = writeln!(
                    o,
                    "::error file={file},title={}::{}",
                    gh_property(&format!("memform gate: {} regressed ({mode} mode)", r.metric)),
                    gh_data(&format!("{}; run {}", describe(r), run.dir.display()))
                );
            } else if improved_beyond(r) {
                let _ = writeln!(
                    o,
                    "::warning file={file},title={}::{}",
                    gh_property(&format!("memform gate: {} improved beyond its tolerance ({mode} mode)", r.metric)),
                    gh_data(&format!(
                        "{}; run {}. Update the baseline deliberately (make update-baseline) so a later regression of this size is caught",
                        describe(r),
                        run.dir.display()
                    ))
                );
            }
        }
        let _ = writeln!(
            o,
            "::notice title={}::{}",
            gh_property(&format!("memform gate ({mode} mode)")),
            gh_data(&if run.failed() == 0 {
                format!("{} metrics pass ({})", run.rows.len(), run.dir.display())
            } else {
                format!("{} of {} metrics regressed ({})", run.failed(), run.rows.len(), run.dir.display())
            })
        );
    }
    o
}

/// What `gate --format github` prints on stdout: the annotations, then
/// per run a heading line and its table. Names read from files (run
/// directories, metrics) are escaped as the annotations' are, so none can
/// make a line that GitHub reads as a workflow command.
pub fn github_stdout(runs: &[GateRun], baseline_path: &Path) -> String {
    let mut o = github_annotations(runs, baseline_path);
    for run in runs {
        let mut heading = gh_data(&run.name());
        if heading.starts_with("::") {
            heading = heading.replacen("::", "%3A%3A", 1);
        }
        let _ = writeln!(o, "{heading}:");
        o.push_str(&render_table(&run.rows));
    }
    o
}

/// The Markdown the gate appends to `$GITHUB_STEP_SUMMARY`: a heading with
/// the verdict and the table, per run.
pub fn step_summary(runs: &[GateRun]) -> String {
    let mut o = String::new();
    for run in runs {
        let verdict = if run.failed() == 0 {
            format!("passed ({} metrics)", run.rows.len())
        } else {
            format!("**FAILED** ({} of {} metrics regressed)", run.failed(), run.rows.len())
        };
        let _ = writeln!(o, "### memform gate: `{}`, {} mode: {verdict}\n", run.dir.display(), run.run.mode);
        if !run.differs.is_empty() {
            let _ = writeln!(o, "**Warning:** {}\n", table_cell(&run.differs_line()));
        }
        o.push_str(&crate::report::caveats::block(&run.run.caveats));
        o.push_str(&render_table(&run.rows));
        o.push('\n');
    }
    o
}

/// Appends `text` to the file `path` (created if missing).
pub fn append(path: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::write(path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::write(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, direction: Direction, baseline: f64, now: f64, allowed: f64, pass: bool) -> GateRow {
        GateRow { metric: metric.into(), baseline, now, delta: now - baseline, rule: "r".into(), pass, direction, allowed }
    }

    #[test]
    fn escapes() {
        assert_eq!(xml_escape("a<b & \"c\"\n"), "a&lt;b &amp; &quot;c&quot;&#10;");
        assert_eq!(gh_data("50% done\nnext"), "50%25 done%0Anext");
        assert_eq!(gh_property("a: b, c"), "a%3A b%2C c");
    }

    #[test]
    fn a_tampered_name_makes_no_workflow_command_on_stdout() {
        let run = |dir: &str, metric: &str| GateRun {
            dir: PathBuf::from(dir),
            run: RunMetrics {
                mode: "rules".into(),
                dataset_name: "d".into(),
                dataset_digest: "x".into(),
                metrics: Default::default(),
                provenance: Default::default(),
                caveats: Vec::new(),
            },
            rows: vec![row(metric, Direction::Higher, 0.5, 0.5, 0.02, true)],
            dataset_changed: false,
            differs: Vec::new(),
            unknown_provenance: false,
        };
        let out = github_stdout(
            &[run("::error::pwned-dir", "f1\n::error title=x::pwned | a"), run("ok\n::warning::pwned", "f1\r\n::error::pwned")],
            Path::new("baseline.json"),
        );
        let commands: Vec<&str> = out.lines().filter(|l| l.starts_with("::")).collect();
        assert_eq!(commands.len(), 2, "only the two ::notice lines: {out}");
        assert!(commands.iter().all(|l| l.starts_with("::notice ")), "{out}");
        assert!(out.contains("| f1 ::error title=x::pwned \\| a |"), "{out}");
        assert!(out.contains("%3A%3Aerror::pwned-dir (rules mode):"), "{out}");
    }

    #[test]
    fn improvements_beyond_tolerance_are_only_in_the_good_direction() {
        assert!(improved_beyond(&row("f1", Direction::Higher, 0.5, 0.6, 0.02, true)));
        assert!(!improved_beyond(&row("f1", Direction::Higher, 0.5, 0.51, 0.02, true)));
        assert!(!improved_beyond(&row("f1", Direction::Higher, 0.5, 0.4, 0.02, false)));
        assert!(improved_beyond(&row("w", Direction::Lower, 10.0, 2.0, 2.0, true)));
        assert!(!improved_beyond(&row("d", Direction::Both, 1.0, 1.0, 0.1, true)));
    }
}
