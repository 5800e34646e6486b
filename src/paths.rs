//! Where a command may write: an output directory is refused when it is an
//! existing file, or when it is the dataset's directory or inside it (a
//! later load would take the run's `run.json` for a conversation).

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Checks the directory `flag` (`--out`, `--runs-dir`) names: not a
/// dangling symbolic link, not an existing file. `dataset`, when given, is
/// the dataset path the command reads: the directory may not be it or
/// inside it, nor, for a dataset that is a single file, the directory
/// holding that file.
pub fn check_out_dir(flag: &str, out: &Path, dataset: Option<&Path>) -> Result<()> {
    if out.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) && !out.exists() {
        let target = std::fs::read_link(out).map(|t| t.display().to_string()).unwrap_or_default();
        return Err(Error::Other(format!(
            "{flag} {}: a symbolic link to {target:?}, which does not exist (a dangling link); create that directory or choose another {flag}",
            out.display()
        )));
    }
    if out.exists() && !out.is_dir() {
        return Err(Error::Other(format!("{flag} {}: exists and is not a directory", out.display())));
    }
    let Some(dataset) = dataset else { return Ok(()) };
    if dataset.is_file() {
        // A single-file dataset: its directory may be read as a dataset too
        // (every `*.json` in it), so a run's files may not land there.
        let file = std::fs::canonicalize(dataset).map_err(|e| Error::io(dataset, e))?;
        if let Some(holder) = file.parent()
            && resolve(out)? == holder
        {
            return Err(Error::Other(format!(
                "{flag} {}: is the directory holding the dataset file {}; later loads of that directory would read its files as conversations: write elsewhere",
                out.display(),
                dataset.display()
            )));
        }
        return Ok(());
    }
    if !dataset.is_dir() {
        return Ok(());
    }
    let data = std::fs::canonicalize(dataset).map_err(|e| Error::io(dataset, e))?;
    let target = resolve(out)?;
    if target.starts_with(&data) {
        let what = if target == data { "is the dataset directory" } else { "is inside the dataset directory" };
        return Err(Error::Other(format!(
            "{flag} {}: {what} {}; later loads would read its files as conversations: write outside the dataset",
            out.display(),
            dataset.display()
        )));
    }
    Ok(())
}

/// An error when the file `out` (what `flag` names) is one of `inputs`
/// (each with what it is) or inside one of the directories `input_dirs`:
/// an output must not overwrite what the command reads.
pub fn check_not_input(flag: &str, out: &Path, inputs: &[(&str, &Path)], input_dirs: &[&Path]) -> Result<()> {
    let target = resolve(out)?;
    for (what, input) in inputs {
        if resolve(input)? == target {
            return Err(Error::Other(format!(
                "{flag} {}: is {what} {}, an input of this command; write elsewhere",
                out.display(),
                input.display()
            )));
        }
    }
    for dir in input_dirs {
        if target.starts_with(resolve(dir)?) {
            return Err(Error::Other(format!(
                "{flag} {}: is inside the run directory {}, an input of this command; write elsewhere",
                out.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// `path` made absolute with symlinks resolved as far as it exists; the
/// rest (not created yet) is appended with `.` and `..` applied.
pub fn resolve(path: &Path) -> Result<PathBuf> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let absolute = cwd.join(path);
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return Ok(out);
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return Ok(absolute),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_the_dataset_and_anything_inside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let ds = tmp.path().join("ds");
        std::fs::create_dir_all(ds.join("conversations")).unwrap();
        for out in [ds.clone(), ds.join("conversations"), ds.join("new/deeper"), tmp.path().join("x/../ds/y")] {
            let err = check_out_dir("--out", &out, Some(&ds)).unwrap_err().to_string();
            assert!(err.starts_with("--out ") && err.contains("dataset directory"), "{err}");
        }
        for out in [tmp.path().join("out"), tmp.path().join("ds-out"), tmp.path().join("ds/../elsewhere")] {
            check_out_dir("--out", &out, Some(&ds)).unwrap();
        }
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&ds, &link).unwrap();
            assert!(check_out_dir("--out", &link.join("o"), Some(&ds)).is_err(), "through a symlink");
        }
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let err = check_out_dir("--out", &file, None).unwrap_err().to_string();
        assert!(err.ends_with("file: exists and is not a directory"), "{err}");
    }
}
