//! Where a command may write: an output directory is refused when it is an
//! existing file, or when it is the dataset's directory or inside it (a
//! later load would take the run's `run.json` for a conversation).

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Checks the directory `flag` (`--out`, `--runs-dir`) names. `dataset`,
/// when given, is the dataset path the command reads; a dataset that is a
/// single file constrains nothing.
pub fn check_out_dir(flag: &str, out: &Path, dataset: Option<&Path>) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(Error::Other(format!("{flag} {}: exists and is not a directory", out.display())));
    }
    let Some(dataset) = dataset.filter(|d| d.is_dir()) else { return Ok(()) };
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

/// `path` made absolute with symlinks resolved as far as it exists; the
/// rest (not created yet) is appended with `.` and `..` applied.
fn resolve(path: &Path) -> Result<PathBuf> {
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
