//! Loading datasets: format detection, the native format and importers.
//!
//! [`load`] takes a dataset directory (or a single LoCoMo `.json` file),
//! detects its format, reads every conversation, and returns them sorted by
//! id with a digest of the input files. A bad file is an `Error::Input`
//! naming the file and the field or line; importers that can carry on past a
//! flaw in the data (a LoCoMo evidence id naming no turn) report it as a
//! [`Warning`] from [`load_with_report`] instead.
//!
//! The format reference is `datasets/README.md`.

pub mod audit;
pub mod locomo;
pub mod longmemeval;
pub mod native;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::normalize::sha256_hex;
use crate::types::{Conversation, Dataset, DatasetFormat, Warning};

/// Reads the dataset at `path` (a directory, or a single LoCoMo `.json`
/// file), detecting its format. Warnings are dropped; see
/// [`load_with_report`].
pub fn load(path: &Path) -> Result<Dataset> {
    load_with_report(path).map(|(dataset, _)| dataset)
}

/// Like [`load`], also returning what an importer noticed and carried on
/// from (kinds: [`locomo::WARN_UNKNOWN_EVIDENCE`] and the other `WARN_*`
/// constants of the importers), in file order.
pub fn load_with_report(path: &Path) -> Result<(Dataset, Vec<Warning>)> {
    load_inner(path, None)
}

/// A conversation file that could not be read, skipped by [`load_keep_going`].
#[derive(Debug)]
pub struct BadFile {
    pub path: PathBuf,
    pub error: Error,
}

/// Like [`load_with_report`], but a conversation file that fails to read or
/// parse is skipped and returned instead of failing the whole load. Errors
/// that concern the dataset as a whole (no such directory, unknown format)
/// still fail.
pub fn load_keep_going(path: &Path) -> Result<(Dataset, Vec<Warning>, Vec<BadFile>)> {
    let mut bad = Vec::new();
    let (d, w) = load_inner(path, Some(&mut bad))?;
    Ok((d, w, bad))
}

fn load_inner(path: &Path, mut bad: Option<&mut Vec<BadFile>>) -> Result<(Dataset, Vec<Warning>)> {
    let meta = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let mut warnings = Vec::new();
    let (format, files, conversations) = if meta.is_file() {
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        let value = parse_json_value(path, &bytes)?;
        if longmemeval::looks_like(&value) {
            let conversations = longmemeval::import(path, &value)?.into_iter().map(|c| (path.to_path_buf(), c)).collect();
            (DatasetFormat::Longmemeval, vec![InputFile { relative: file_name(path), bytes }], conversations)
        } else {
            let (files, conversations) = load_locomo_value(path, bytes, value, &mut warnings)?;
            (DatasetFormat::Locomo, files, conversations)
        }
    } else {
        match detect_dir(path, bad.as_deref_mut())? {
            Detected::Native(paths) => {
                let (files, conversations) = load_native(path, &paths, bad.as_deref_mut())?;
                (DatasetFormat::Native, files, conversations)
            }
            Detected::Locomo(parsed) => {
                let (files, conversations) = load_locomo_parsed(parsed, &mut warnings, bad)?;
                (DatasetFormat::Locomo, files, conversations)
            }
        }
    };
    let conversations = sort_unique(conversations)?;
    let dataset = Dataset { name: dataset_name(path, meta.is_file()), format, digest: digest(&files), conversations };
    Ok((dataset, warnings))
}

/// Detects the format of the dataset at `path` without importing it.
pub fn detect(path: &Path) -> Result<DatasetFormat> {
    let meta = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_file() {
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        let value = parse_json_value(path, &bytes)?;
        return if longmemeval::looks_like(&value) {
            Ok(DatasetFormat::Longmemeval)
        } else if locomo::looks_like(&value) {
            Ok(DatasetFormat::Locomo)
        } else {
            Err(not_locomo_file(path))
        };
    }
    Ok(match detect_dir(path, None)? {
        Detected::Native(_) => DatasetFormat::Native,
        Detected::Locomo(_) => DatasetFormat::Locomo,
    })
}

/// One input file: its path relative to the dataset root (`/`-separated) and
/// its bytes. The digest covers exactly these.
struct InputFile {
    relative: String,
    bytes: Vec<u8>,
}

/// A LoCoMo candidate file, read and parsed once during detection.
struct ParsedJson {
    path: PathBuf,
    file: InputFile,
    value: serde_json::Value,
}

/// Input files and the conversations read from them, each with its file.
type Loaded = (Vec<InputFile>, Vec<(PathBuf, Conversation)>);

enum Detected {
    Native(Vec<PathBuf>),
    Locomo(Vec<ParsedJson>),
}

fn detect_dir(dir: &Path, mut bad: Option<&mut Vec<BadFile>>) -> Result<Detected> {
    let conversations_dir = dir.join("conversations");
    if conversations_dir.is_dir() {
        let skipped_before = bad.as_deref().map_or(0, Vec::len);
        let paths = json_files(&conversations_dir, bad.as_deref_mut())?;
        if !paths.is_empty() || bad.as_deref().map_or(0, Vec::len) > skipped_before {
            return Ok(Detected::Native(paths));
        }
    }
    let mut parsed = Vec::new();
    // Each file read and parsed on its own thread; the results taken in name order.
    let paths = json_files(dir, bad.as_deref_mut())?;
    let reads: Vec<_> = {
        use rayon::prelude::*;
        paths
            .par_iter()
            .map(|path| fs::read(path).map_err(|e| Error::io(path, e)).and_then(|bytes| parse_json_value(path, &bytes).map(|v| (bytes, v))))
            .collect()
    };
    for (path, read) in paths.into_iter().zip(reads) {
        let (bytes, value) = match (read, bad.as_deref_mut()) {
            (Ok(x), _) => x,
            (Err(error), Some(bad)) => {
                bad.push(BadFile { path: path.clone(), error });
                continue;
            }
            (Err(e), None) => return Err(e),
        };
        parsed.push(ParsedJson { file: InputFile { relative: file_name(&path), bytes }, path, value });
    }
    // LongMemEval is read one file at a time: a directory of them gets the hint.
    let longmemeval_hint =
        |p: &ParsedJson| format!("; {} is a LongMemEval file: pass the file itself (--dataset {})", p.path.display(), p.path.display());
    if !parsed.iter().any(|p| locomo::looks_like(&p.value)) {
        return Err(Error::UnknownFormat {
            path: dir.to_path_buf(),
            message: format!(
                "looked for conversations/*.json (memform native, \"format\": {:?}) and for \
                 *.json files with LoCoMo keys (speaker_a, speaker_b, session_N), found neither{}",
                native::FORMAT,
                parsed.iter().find(|p| longmemeval::looks_like(&p.value)).map(longmemeval_hint).unwrap_or_default()
            ),
        });
    }
    if let Some(stray) = parsed.iter().find(|p| !locomo::looks_like(&p.value)) {
        let hint = if longmemeval::looks_like(&stray.value) { longmemeval_hint(stray) } else { String::new() };
        return Err(Error::input(
            &stray.path,
            format!(
                "not a LoCoMo conversation (no speaker_a, speaker_b or session_N key) in a directory \
                 of LoCoMo files{hint}"
            ),
        ));
    }
    Ok(Detected::Locomo(parsed))
}

fn load_native(dir: &Path, paths: &[PathBuf], mut bad: Option<&mut Vec<BadFile>>) -> Result<Loaded> {
    let mut files = Vec::new();
    let mut conversations = Vec::new();
    // Each file read and parsed on its own thread; the results taken in name order.
    let reads: Vec<_> = {
        use rayon::prelude::*;
        paths
            .par_iter()
            .map(|path| {
                fs::read(path)
                    .map_err(|e| Error::io(path, e))
                    .and_then(|bytes| crate::error::reject_bom(path, &bytes).map(|()| bytes))
                    .and_then(|bytes| native::parse(path, &bytes).map(|c| (bytes, c)))
            })
            .collect()
    };
    for (path, read) in paths.iter().zip(reads) {
        let (bytes, conversation) = match (read, bad.as_deref_mut()) {
            (Ok(x), _) => x,
            (Err(error), Some(bad)) => {
                bad.push(BadFile { path: path.clone(), error });
                continue;
            }
            (Err(e), None) => return Err(e),
        };
        conversations.push((path.clone(), conversation));
        let relative = path.strip_prefix(dir).map(relative_string).unwrap_or_else(|_| file_name(path));
        files.push(InputFile { relative, bytes });
    }
    Ok((files, conversations))
}

fn load_locomo_value(path: &Path, bytes: Vec<u8>, value: serde_json::Value, warnings: &mut Vec<Warning>) -> Result<Loaded> {
    if !locomo::looks_like(&value) {
        return Err(not_locomo_file(path));
    }
    let parsed = ParsedJson { path: path.to_path_buf(), file: InputFile { relative: file_name(path), bytes }, value };
    load_locomo_parsed(vec![parsed], warnings, None)
}

fn load_locomo_parsed(parsed: Vec<ParsedJson>, warnings: &mut Vec<Warning>, mut bad: Option<&mut Vec<BadFile>>) -> Result<Loaded> {
    let mut files = Vec::new();
    let mut conversations = Vec::new();
    // Each file imported on its own thread with its own warnings; both taken in file order.
    let imports: Vec<(Result<Vec<Conversation>>, Vec<Warning>)> = {
        use rayon::prelude::*;
        parsed
            .par_iter()
            .map(|p| {
                let stem = p.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let mut own = Vec::new();
                (locomo::import(&p.path, &stem, &p.value, &mut own), own)
            })
            .collect()
    };
    for (p, (imported, own)) in parsed.into_iter().zip(imports) {
        warnings.extend(own);
        let imported = match (imported, bad.as_deref_mut()) {
            (Ok(c), _) => c,
            (Err(error), Some(bad)) => {
                bad.push(BadFile { path: p.path.clone(), error });
                continue;
            }
            (Err(e), None) => return Err(e),
        };
        for conversation in imported {
            conversations.push((p.path.clone(), conversation));
        }
        files.push(p.file);
    }
    Ok((files, conversations))
}

fn not_locomo_file(path: &Path) -> Error {
    Error::UnknownFormat {
        path: path.to_path_buf(),
        message: "looked for a LoCoMo conversation (an object with speaker_a, speaker_b and \
                  session_N keys, or a list of {sample_id, conversation} objects) and for LongMemEval \
                  instances (a list of objects with question_id, question_date and haystack_sessions), found neither"
            .into(),
    }
}

/// Sorts by id; two conversations with one id are an error naming both files.
fn sort_unique(conversations: Vec<(PathBuf, Conversation)>) -> Result<Vec<Conversation>> {
    let mut by_id: BTreeMap<String, (PathBuf, Conversation)> = BTreeMap::new();
    for (path, conversation) in conversations {
        if let Some((first, _)) = by_id.get(&conversation.id) {
            return Err(Error::input(&path, format!("id: conversation {:?} is also defined in {}", conversation.id, first.display())));
        }
        by_id.insert(conversation.id.clone(), (path, conversation));
    }
    Ok(by_id.into_values().map(|(_, c)| c).collect())
}

/// SHA-256 hex over the input files in order of relative path: for each,
/// the path, a NUL, its length in decimal, a NUL, and its bytes.
fn digest(files: &[InputFile]) -> String {
    let mut sorted: Vec<&InputFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.relative.cmp(&b.relative));
    let mut buf = Vec::with_capacity(files.iter().map(|f| f.bytes.len() + f.relative.len() + 24).sum());
    for f in sorted {
        buf.extend_from_slice(f.relative.as_bytes());
        buf.push(0);
        buf.extend_from_slice(f.bytes.len().to_string().as_bytes());
        buf.push(0);
        buf.extend_from_slice(&f.bytes);
    }
    sha256_hex(&buf)
}

fn dataset_name(path: &Path, is_file: bool) -> String {
    let own = if is_file { path.file_stem() } else { path.file_name() };
    if let Some(name) = own {
        return name.to_string_lossy().into_owned();
    }
    fs::canonicalize(path).ok().and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())).unwrap_or_default()
}

/// The `*.json` files directly in `dir`, sorted by name. Every `*.json`
/// entry must be a regular file or a symlink to one: a dangling symlink, a
/// symlink loop, a directory or any other kind of entry is an error naming
/// it, or, with `bad` (`--keep-going`), a skipped file counted there.
fn json_files(dir: &Path, mut bad: Option<&mut Vec<BadFile>>) -> Result<Vec<PathBuf>> {
    let entries = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        match (not_a_json_file(&path), bad.as_deref_mut()) {
            (None, _) => out.push(path),
            (Some(error), Some(bad)) => bad.push(BadFile { path, error }),
            (Some(error), None) => return Err(error),
        }
    }
    Ok(out)
}

/// Why the `*.json` entry at `path` cannot be read as a file, if it cannot.
fn not_a_json_file(path: &Path) -> Option<Error> {
    let link = fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_symlink()).map(|_| {
        let target = fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
        format!("symbolic link to {target:?}")
    });
    let problem = match fs::metadata(path) {
        Ok(m) if m.is_file() => return None,
        Ok(m) if m.is_dir() => "is a directory, not a conversation file".to_string(),
        Ok(_) => "is not a regular file".to_string(),
        Err(e) if e.raw_os_error() == Some(40) => "symbolic link loop (too many levels of symbolic links)".to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "dangling symbolic link (its target does not exist)".to_string(),
        Err(e) => format!("cannot be read: {e}"),
    };
    Some(Error::input(
        path,
        match link {
            Some(l) if !problem.starts_with("symbolic link loop") && !problem.starts_with("dangling") => format!("{l} that {problem}"),
            Some(l) => format!("{problem}: {l}"),
            None => problem,
        },
    ))
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn relative_string(relative: &Path) -> String {
    relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn parse_json_value(path: &Path, bytes: &[u8]) -> Result<serde_json::Value> {
    crate::error::reject_bom(path, bytes)?;
    serde_json::from_slice(bytes).map_err(|e| json_error(path, "", &e))
}

/// `Error::Input` for a serde_json error: `line L column C: field.path: message`.
pub(crate) fn json_error(path: &Path, field: &str, err: &serde_json::Error) -> Error {
    let mut message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    if let Some(stripped) = message.strip_suffix(&suffix) {
        message = stripped.to_string();
    }
    let mut field = field.to_string();
    if let Some(name) = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        field = if field.is_empty() { name.to_string() } else { format!("{field}.{name}") };
        message = "missing field".into();
    }
    let position = if err.line() > 0 { format!("line {} column {}: ", err.line(), err.column()) } else { String::new() };
    let field = if field.is_empty() { String::new() } else { format!("{field}: ") };
    Error::input(path, format!("{position}{field}{message}"))
}

/// Whether `s` is an ISO 8601 local date-time `YYYY-MM-DDTHH:MM:SS` naming
/// a real calendar moment (no zone, no fraction).
pub(crate) fn is_local_datetime(s: &str) -> bool {
    let b = s.as_bytes();
    let shape = b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(u32::MAX);
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let (hour, minute, second) = (num(11..13), num(14..16), num(17..19));
    (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month) && hour < 24 && minute < 60 && second < 60
}

pub(crate) fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Keeps the conversations named in `ids` (in the dataset's order; all when
/// empty), then the first `limit` of them. An id the dataset does not have
/// is an error naming the closest one. A subset gets its own digest (the
/// dataset's and the ids kept), so the gate and `compare` never take it
/// for the whole dataset.
pub fn subset(ds: &mut Dataset, ids: &[String], limit: Option<usize>) -> Result<()> {
    if ids.is_empty() && limit.is_none_or(|n| n >= ds.conversations.len()) {
        return Ok(());
    }
    for id in ids {
        if !ds.conversations.iter().any(|c| &c.id == id) {
            let hint = crate::config::did_you_mean(id, ds.conversations.iter().map(|c| c.id.as_str()))
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(Error::Config(format!("--conversations: dataset {} has no conversation `{id}`{hint}", ds.name)));
        }
    }
    if !ids.is_empty() {
        ds.conversations.retain(|c| ids.contains(&c.id));
    }
    if let Some(n) = limit {
        ds.conversations.truncate(n);
    }
    let kept: Vec<&str> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
    ds.digest = crate::normalize::sha256_hex(format!("{}\nconversations={}", ds.digest, kept.join(",")).as_bytes());
    Ok(())
}

/// How a sweep divides a dataset's conversations into a tune set (where the
/// best point is chosen) and a held-out set (where it is reported).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Split {
    /// Named conversations are held out; the tune set is the named one, or
    /// every other conversation when none is named.
    Named { tune: Vec<String>, holdout: Vec<String> },
    /// A fraction of the conversations, chosen by a seeded hash of their ids
    /// (the same ids, fraction and seed give the same split on any machine),
    /// at least one on each side.
    Fraction { holdout: f64, seed: u64 },
}

/// The tune and held-out datasets of `split`, each in the dataset's order
/// and with its own digest (as [`subset`] gives it).
pub fn split(ds: &Dataset, split: &Split) -> Result<(Dataset, Dataset)> {
    let ids: Vec<&str> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
    let known = |flag: &str, id: &String| -> Result<()> {
        if ids.contains(&id.as_str()) {
            return Ok(());
        }
        let hint = crate::config::did_you_mean(id, ids.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
        Err(Error::Config(format!("{flag}: dataset {} has no conversation `{id}`{hint}", ds.name)))
    };
    let holdout: Vec<String> = match split {
        Split::Named { tune, holdout } => {
            for id in tune {
                known("--tune-conversations", id)?;
            }
            for id in holdout {
                known("--holdout-conversations", id)?;
            }
            if let Some(both) = tune.iter().find(|t| holdout.contains(t)) {
                return Err(Error::Config(format!("--tune-conversations and --holdout-conversations both name `{both}`")));
            }
            if holdout.is_empty() {
                ids.iter().filter(|i| !tune.iter().any(|t| t == *i)).map(|i| i.to_string()).collect()
            } else {
                holdout.clone()
            }
        }
        Split::Fraction { holdout, seed } => {
            if !(holdout.is_finite() && *holdout > 0.0 && *holdout < 1.0) {
                return Err(Error::Config(format!("--holdout-fraction: {holdout} is not between 0 and 1 (exclusive)")));
            }
            let n = ids.len();
            let take = ((n as f64 * holdout).round() as usize).clamp(1, n.saturating_sub(1).max(1));
            let mut keyed: Vec<(String, &str)> =
                ids.iter().map(|id| (crate::normalize::sha256_hex(format!("{seed}\n{id}").as_bytes()), *id)).collect();
            keyed.sort();
            keyed.into_iter().take(take).map(|(_, id)| id.to_string()).collect()
        }
    };
    let tune: Vec<String> = match split {
        Split::Named { tune, .. } if !tune.is_empty() => tune.clone(),
        _ => ids.iter().filter(|i| !holdout.iter().any(|h| h == *i)).map(|i| i.to_string()).collect(),
    };
    if tune.is_empty() || holdout.is_empty() {
        return Err(Error::Config(format!(
            "a held-out split needs at least one conversation on each side: dataset {} has {} ({} to tune on, {} held out)",
            ds.name,
            ids.len(),
            tune.len(),
            holdout.len()
        )));
    }
    let mut a = ds.clone();
    subset(&mut a, &tune, None)?;
    let mut b = ds.clone();
    subset(&mut b, &holdout, None)?;
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Verdict;

    const NATIVE: &str = r#"{"format": "memform-conversation/1", "id": "ID", "speakers": ["Ann"],
        "episodes": [{"id": "e1", "turns": [{"id": "t1", "speaker": "Ann", "text": "I live in Oslo."}]}]}"#;

    const LOCOMO: &str = r#"{"speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "9:05 am on 3 March, 2021",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hello."}]}"#;

    #[test]
    fn a_subset_keeps_the_named_conversations_then_the_first_n_and_has_its_own_digest() {
        let dir = tempfile::tempdir().unwrap();
        for id in ["alpha", "beta", "gamma"] {
            write(dir.path(), &format!("conversations/{id}.json"), &NATIVE.replace("\"ID\"", &format!("\"{id}\"")));
        }
        let full = load(dir.path()).unwrap();
        let ids = |d: &Dataset| d.conversations.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        let mut d = full.clone();
        subset(&mut d, &[], None).unwrap();
        assert_eq!((ids(&d), d.digest.clone()), (ids(&full), full.digest.clone()), "no subset: the dataset as it is");
        let mut d = full.clone();
        subset(&mut d, &["gamma".into(), "alpha".into()], None).unwrap();
        assert_eq!(ids(&d), ["alpha", "gamma"]);
        assert_ne!(d.digest, full.digest);
        let mut d = full.clone();
        subset(&mut d, &[], Some(2)).unwrap();
        assert_eq!(ids(&d), ["alpha", "beta"]);
        let err = subset(&mut full.clone(), &["gamme".into()], None).unwrap_err().to_string();
        assert!(err.contains("no conversation `gamme` (did you mean `gamma`?)"), "{err}");
    }

    #[test]
    fn a_split_holds_out_named_or_hashed_conversations_and_never_leaves_a_side_empty() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"];
        for id in names {
            write(dir.path(), &format!("conversations/{id}.json"), &NATIVE.replace("\"ID\"", &format!("\"{id}\"")));
        }
        let full = load(dir.path()).unwrap();
        let ids = |d: &Dataset| d.conversations.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        let named = |tune: &[&str], holdout: &[&str]| Split::Named {
            tune: tune.iter().map(|s| s.to_string()).collect(),
            holdout: holdout.iter().map(|s| s.to_string()).collect(),
        };
        let (t, h) = split(&full, &named(&[], &["c7", "c2"])).unwrap();
        assert_eq!(ids(&h), ["c2", "c7"], "in the dataset's order");
        assert_eq!(ids(&t), ["c0", "c1", "c3", "c4", "c5", "c6", "c8", "c9"], "the rest is tuned on");
        assert!(t.digest != h.digest && t.digest != full.digest);
        let (t, h) = split(&full, &named(&["c0"], &["c1"])).unwrap();
        assert_eq!((ids(&t), ids(&h)), (vec!["c0".to_string()], vec!["c1".to_string()]), "both named: the others are unused");
        let err = split(&full, &named(&["c1"], &["c1"])).unwrap_err().to_string();
        assert!(err.contains("both name `c1`"), "{err}");
        let err = split(&full, &named(&[], &["c11"])).unwrap_err().to_string();
        assert!(err.contains("--holdout-conversations") && err.contains("no conversation `c11`"), "{err}");
        let err = split(&full, &named(&[], &names)).unwrap_err().to_string();
        assert!(err.contains("at least one conversation on each side"), "{err}");

        let (t, h) = split(&full, &Split::Fraction { holdout: 0.3, seed: 7 }).unwrap();
        assert_eq!((t.conversations.len(), h.conversations.len()), (7, 3));
        assert!(ids(&h).iter().all(|i| !ids(&t).contains(i)));
        let (_, again) = split(&full, &Split::Fraction { holdout: 0.3, seed: 7 }).unwrap();
        assert_eq!(ids(&again), ids(&h), "the same seed, the same split");
        let other: Vec<Vec<String>> = (0..8).map(|seed| ids(&split(&full, &Split::Fraction { holdout: 0.3, seed }).unwrap().1)).collect();
        assert!(other.iter().any(|o| *o != ids(&h)), "another seed, another split: {other:?}");
        let (t, h) = split(&full, &Split::Fraction { holdout: 0.01, seed: 0 }).unwrap();
        assert_eq!((t.conversations.len(), h.conversations.len()), (9, 1), "at least one held out");
        let (t, h) = split(&full, &Split::Fraction { holdout: 0.99, seed: 0 }).unwrap();
        assert_eq!((t.conversations.len(), h.conversations.len()), (1, 9), "at least one to tune on");
        for bad in [0.0, 1.0, f64::NAN, -0.5] {
            assert!(split(&full, &Split::Fraction { holdout: bad, seed: 0 }).is_err(), "{bad}");
        }
    }

    fn write(dir: &Path, relative: &str, text: &str) {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, text).unwrap();
    }

    fn native_dir(ids: &[&str]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for id in ids {
            write(tmp.path(), &format!("conversations/{id}.json"), &NATIVE.replace("ID", id));
        }
        tmp
    }

    #[test]
    fn detects_native_and_sorts_by_id() {
        let tmp = native_dir(&["zeta", "alpha", "mid"]);
        write(tmp.path(), "README.md", "not a conversation");
        assert_eq!(detect(tmp.path()).unwrap(), DatasetFormat::Native);
        let ds = load(tmp.path()).unwrap();
        assert_eq!(ds.format, DatasetFormat::Native);
        let ids: Vec<_> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["alpha", "mid", "zeta"]);
        assert_eq!(ds.name, tmp.path().file_name().unwrap().to_string_lossy());
    }

    #[test]
    fn detects_locomo_directory_single_file_and_array_file() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "b/7.json", LOCOMO);
        write(tmp.path(), "b/3.json", LOCOMO);
        write(tmp.path(), "b/notes.txt", "ignored");
        let dir = tmp.path().join("b");
        assert_eq!(detect(&dir).unwrap(), DatasetFormat::Locomo);
        let ds = load(&dir).unwrap();
        assert_eq!(ds.format, DatasetFormat::Locomo);
        assert_eq!(ds.name, "b");
        let ids: Vec<_> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["3", "7"]);

        let single = dir.join("7.json");
        assert_eq!(detect(&single).unwrap(), DatasetFormat::Locomo);
        let ds = load(&single).unwrap();
        assert_eq!(ds.name, "7");
        assert_eq!(ds.conversations.len(), 1);
        assert_eq!(ds.conversations[0].speakers, ["Ann", "Bo"]);

        let array = format!(
            r#"[{{"sample_id": "conv-2", "conversation": {LOCOMO}, "qa": []}},
                {{"sample_id": "conv-1", "conversation": {LOCOMO}}}]"#
        );
        write(tmp.path(), "all/locomo10.json", &array);
        let ds = load(&tmp.path().join("all/locomo10.json")).unwrap();
        let ids: Vec<_> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["conv-1", "conv-2"]);
        assert_eq!(ds.name, "locomo10");
        let ds = load(&tmp.path().join("all")).unwrap();
        assert_eq!(ds.conversations.len(), 2);
    }

    #[test]
    fn unknown_format_names_the_directory_and_what_was_looked_for() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "data.json", r#"{"rows": [1, 2]}"#);
        let err = load(tmp.path()).unwrap_err();
        assert!(matches!(err, Error::UnknownFormat { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");
        assert!(msg.contains("conversations/*.json") && msg.contains("speaker_a"), "{msg}");

        let empty = tempfile::tempdir().unwrap();
        fs::create_dir(empty.path().join("conversations")).unwrap();
        assert!(matches!(load(empty.path()).unwrap_err(), Error::UnknownFormat { .. }));

        let err = load(&tmp.path().join("data.json")).unwrap_err();
        assert!(matches!(err, Error::UnknownFormat { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn unreadable_json_entries_are_errors_or_skipped_files_never_silent() {
        use std::os::unix::fs::symlink;
        type Case = (&'static str, fn(&Path), &'static str);
        let cases: [Case; 3] = [
            ("dangling", |c| symlink(c.join("missing.json"), c.join("gone.json")).unwrap(), "gone.json: dangling symbolic link"),
            (
                "loop",
                |c| {
                    symlink(c.join("b.json"), c.join("a.json")).unwrap();
                    symlink(c.join("a.json"), c.join("b.json")).unwrap();
                },
                "a.json: symbolic link loop",
            ),
            ("directory", |c| fs::create_dir(c.join("x.json")).unwrap(), "x.json: is a directory, not a conversation file"),
        ];
        for (name, make, want) in cases {
            let tmp = native_dir(&["good"]);
            make(&tmp.path().join("conversations"));
            let err = load(tmp.path()).unwrap_err().to_string();
            assert!(err.contains(want), "{name}: {err}");
            let (ds, _, bad) = load_keep_going(tmp.path()).unwrap();
            assert_eq!(ds.conversations.len(), 1, "{name}");
            assert!(!bad.is_empty() && bad[0].error.to_string().contains(want), "{name}: {bad:?}");
        }
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "1.json", LOCOMO);
        fs::create_dir(tmp.path().join("2.json")).unwrap();
        assert!(load(tmp.path()).unwrap_err().to_string().contains("2.json: is a directory"), "LoCoMo directories too");
        let link = tmp.path().join("link.json");
        fs::remove_dir(tmp.path().join("2.json")).unwrap();
        symlink(tmp.path().join("1.json"), &link).unwrap();
        let ds = load(tmp.path()).unwrap();
        let ids: Vec<_> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["1", "link"], "a symlink to a good file is read like one");
    }

    #[test]
    fn a_byte_order_mark_is_named() {
        let tmp = native_dir(&[]);
        write(tmp.path(), "conversations/a.json", &format!("\u{feff}{}", NATIVE.replace("ID", "a")));
        let err = load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("a.json: line 1 column 1: starts with a UTF-8 byte-order mark"), "{err}");
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "7.json", &format!("\u{feff}{LOCOMO}"));
        let err = load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("7.json: line 1 column 1: starts with a UTF-8 byte-order mark"), "{err}");
    }

    #[test]
    fn missing_path_is_an_io_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = load(&missing).unwrap_err();
        assert!(matches!(err, Error::Io { .. }));
        assert!(err.to_string().contains("nope"), "{err}");
    }

    #[test]
    fn stray_json_in_a_locomo_directory_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "1.json", LOCOMO);
        write(tmp.path(), "extra.json", "[1, 2]");
        let err = load(tmp.path()).unwrap_err();
        assert!(matches!(err, Error::Input { .. }));
        assert!(err.to_string().contains("extra.json"), "{err}");
    }

    #[test]
    fn malformed_json_in_a_candidate_directory_names_file_and_line() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "1.json", "{\n  \"speaker_a\": \"Ann\",\n  oops\n}");
        let msg = load(tmp.path()).unwrap_err().to_string();
        assert!(msg.contains("1.json") && msg.contains("line 3 column"), "{msg}");
    }

    #[test]
    fn duplicate_conversation_ids_across_files_name_both_files() {
        let tmp = tempfile::tempdir().unwrap();
        let with_id = |id: &str| format!(r#"[{{"sample_id": "{id}", "conversation": {LOCOMO}}}]"#);
        write(tmp.path(), "a.json", &with_id("same"));
        write(tmp.path(), "b.json", &with_id("same"));
        let msg = load(tmp.path()).unwrap_err().to_string();
        assert!(msg.contains("a.json") && msg.contains("b.json") && msg.contains("\"same\""), "{msg}");
    }

    #[test]
    fn digest_is_stable_across_locations_and_tracks_names_and_bytes() {
        let a = native_dir(&["one", "two"]);
        let b = native_dir(&["two", "one"]);
        let da = load(a.path()).unwrap().digest;
        assert_eq!(da.len(), 64);
        assert!(da.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(load(b.path()).unwrap().digest, da);
        assert_eq!(load(a.path()).unwrap().digest, da);

        write(b.path(), "conversations/two.json", &NATIVE.replace("ID", "two").replace("Oslo", "Bergen"));
        assert_ne!(load(b.path()).unwrap().digest, da);

        let c = native_dir(&["one", "two"]);
        write(c.path(), "conversations/two.json", &format!("{} ", NATIVE.replace("ID", "two")));
        assert_ne!(load(c.path()).unwrap().digest, da, "a trailing space changes the bytes");

        let d = native_dir(&["one", "two"]);
        write(d.path(), "notes.md", "files outside conversations/ are not inputs");
        assert_eq!(load(d.path()).unwrap().digest, da);
    }

    #[test]
    fn digest_separates_path_from_content() {
        let f = |rel: &str, bytes: &str| InputFile { relative: rel.into(), bytes: bytes.as_bytes().to_vec() };
        assert_ne!(digest(&[f("ab", "c")]), digest(&[f("a", "bc")]));
        assert_ne!(digest(&[f("a", "x"), f("b", "")]), digest(&[f("a", ""), f("b", "x")]));
        assert_eq!(digest(&[f("a", "1"), f("b", "2")]), digest(&[f("b", "2"), f("a", "1")]));
    }

    fn bundled() -> Dataset {
        load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/scenarios")).unwrap()
    }

    fn scenario<'a>(ds: &'a Dataset, id: &str) -> &'a Conversation {
        ds.conversations.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("scenario {id} missing"))
    }

    fn texts(c: &Conversation) -> Vec<&str> {
        c.episodes.iter().flat_map(|e| &e.turns).map(|t| t.text.as_str()).collect()
    }

    #[test]
    fn bundled_scenarios_load_with_gold_for_every_behaviour() {
        let ds = bundled();
        assert_eq!(ds.name, "scenarios");
        assert_eq!(ds.format, DatasetFormat::Native);
        let ids: Vec<_> = ds.conversations.iter().map(|c| c.id.as_str()).collect();
        for id in [
            "alias-and-types",
            "budgets",
            "closure",
            "content-hash-variants",
            "empty-and-long-turns",
            "historical",
            "job-change",
            "low-confidence",
            "negation-antonym",
            "noise",
            "paraphrase-duplicates",
            "prompt-injection",
        ] {
            assert!(ids.contains(&id), "{id} missing from {ids:?}");
        }
        for c in &ds.conversations {
            assert!(!c.gold.facts.is_empty(), "{}", c.id);
            assert!((1..=3).contains(&c.episodes.len()), "{}", c.id);
            assert!(c.episodes.iter().all(|e| e.timestamp.is_some()), "{}", c.id);
            assert_eq!(c.speakers.len(), 2, "{}", c.id);
            assert_eq!(c.speakers[1], "Assistant", "{}", c.id);
        }
    }

    #[test]
    fn bundled_scenarios_keep_their_edge_cases() {
        let ds = bundled();
        let verdicts = |id: &str| -> Vec<Verdict> { scenario(&ds, id).gold.contradictions.iter().map(|c| c.verdict).collect() };
        assert!(verdicts("job-change").contains(&Verdict::Old));
        assert_eq!(verdicts("budgets"), [Verdict::Old, Verdict::Neither]);
        assert_eq!(verdicts("historical"), [Verdict::Neither]);
        assert_eq!(verdicts("low-confidence"), [Verdict::Neither, Verdict::Neither]);
        assert_eq!(verdicts("negation-antonym"), [Verdict::Old, Verdict::Old]);
        assert!(!scenario(&ds, "paraphrase-duplicates").gold.duplicate_groups.is_empty());

        let hash = texts(scenario(&ds, "content-hash-variants"));
        assert!(hash.iter().any(|t| t.contains("\r\n")));
        assert!(hash.iter().any(|t| t.contains("Zürich")) && hash.iter().any(|t| t.contains("café")));
        assert!(hash.iter().any(|t| t.contains("u\u{308}")), "decomposed umlaut");
        assert!(hash.iter().any(|t| t.starts_with(' ') && t.contains("   ")));

        let sizes = texts(scenario(&ds, "empty-and-long-turns"));
        assert!(sizes.contains(&""));
        assert!(sizes.iter().any(|t| t.chars().count() > 3000));

        let noise = scenario(&ds, "noise");
        assert!(noise.episodes.iter().flat_map(|e| &e.turns).any(|t| t.speaker == "tool"));
        assert_eq!(noise.gold.facts.len(), 1);
        assert!(texts(scenario(&ds, "prompt-injection")).iter().any(|t| t.contains("Ignore all previous instructions")));
    }

    #[test]
    fn local_datetime_checks_calendar() {
        assert!(is_local_datetime("2024-02-29T23:59:59"));
        for bad in [
            "2023-02-29T10:00:00",
            "2024-13-01T10:00:00",
            "2024-01-01T24:00:00",
            "2024-01-01 10:00:00",
            "2024-01-01T10:00",
            "2024-01-01T10:00:00Z",
            "2024-1-01T10:00:00",
        ] {
            assert!(!is_local_datetime(bad), "{bad}");
        }
    }
}
