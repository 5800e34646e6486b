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
    let file = std::fs::File::create(path).map_err(|e| Error::write(path, e))?;
    let mut df = df.clone();
    // Buffered: the writer makes many small writes (thousands of syscalls unbuffered).
    let mut w = std::io::BufWriter::new(file);
    ParquetWriter::new(&mut w).finish(&mut df).map_err(|e| frame_err(path, e))?;
    std::io::Write::flush(&mut w).map_err(|e| Error::write(path, e))?;
    Ok(())
}

pub fn write_csv(path: &Path, df: &DataFrame) -> Result<()> {
    let mut file = std::fs::File::create(path).map_err(|e| Error::write(path, e))?;
    let mut df = df.clone();
    CsvWriter::new(&mut file).finish(&mut df).map_err(|e| frame_err(path, e))
}

pub fn read_parquet(path: &Path) -> Result<DataFrame> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    ParquetReader::new(file).finish().map_err(|e| Error::input(path, e.to_string()))
}
