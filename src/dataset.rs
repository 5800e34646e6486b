//! Loading datasets: format detection, the native format and importers.
//! A bad file is an `Error::Input` naming the file and the field or line.

pub mod locomo;
pub mod native;

use std::path::Path;

use crate::error::Result;
use crate::types::Dataset;

/// Reads the dataset in `dir`, detecting its format.
pub fn load(dir: &Path) -> Result<Dataset> {
    todo_load(dir)
}

fn todo_load(dir: &Path) -> Result<Dataset> {
    Err(crate::error::Error::UnknownFormat {
        path: dir.to_path_buf(),
        message: "loader not written yet".into(),
    })
}
