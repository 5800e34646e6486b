//! A run's frames on disk: Parquet and CSV writing and Parquet reading of
//! polars frames, for every module that writes a table (the run's frames,
//! QA's rows, a sweep's points).

use std::path::Path;

use polars::prelude::DataFrame;
use polars_io::prelude::{CsvWriter, ParquetReader, ParquetWriter};
use polars_io::{SerReader, SerWriter};

use crate::error::{Error, Result};

fn frame_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("write {}: {e}", path.display()))
}

pub fn write_parquet(path: &Path, df: &DataFrame) -> Result<()> {
    let mut df = df.clone();
    // Buffered: the writer makes many small writes (thousands of syscalls unbuffered).
    crate::rundir::write_with(path, |w| ParquetWriter::new(w).finish(&mut df).map(|_| ()).map_err(|e| frame_err(path, e)))
}

pub fn write_csv(path: &Path, df: &DataFrame) -> Result<()> {
    let mut df = df.clone();
    crate::rundir::write_with(path, |w| CsvWriter::new(w).finish(&mut df).map_err(|e| frame_err(path, e)))
}

pub fn read_parquet(path: &Path) -> Result<DataFrame> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    ParquetReader::new(file).finish().map_err(|e| Error::input(path, e.to_string()))
}
