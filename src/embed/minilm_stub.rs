//! MiniLM when the library is built without the `full` feature (the fuzz
//! targets' build): the same constants and ids, and a loader that fails.

use std::path::{Path, PathBuf};

use super::Embedder;
use crate::error::{Error, Result};

pub const DIMS: usize = 384;
pub const MAX_TOKENS: usize = 256;
pub const DEFAULT_BATCH: usize = 32;
pub const DEFAULT_MODEL_DIR: &str = "models/all-MiniLM-L6-v2";

/// Never built: [`MiniLmEmbedder::load`] always fails.
pub enum MiniLmEmbedder {}

impl MiniLmEmbedder {
    pub fn load(model_dir: &Path) -> Result<Self> {
        Err(Error::EmbedModel { path: model_dir.to_path_buf(), message: "memform was built without the `full` feature (no candle)".into() })
    }

    pub fn id_for(model_dir: &Path) -> String {
        let dir: PathBuf = model_dir.components().collect();
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty());
        format!("minilm:{}", name.unwrap_or_else(|| "all-MiniLM-L6-v2".to_string()))
    }
}

impl Embedder for MiniLmEmbedder {
    fn id(&self) -> String {
        match *self {}
    }
    fn dims(&self) -> usize {
        match *self {}
    }
    fn embed(&self, _texts: &[&str], _source: &str) -> Result<Vec<Vec<f32>>> {
        match *self {}
    }
}
