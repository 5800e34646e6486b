//! The in-process sentence embedder: all-MiniLM-L6-v2 (a 6-layer BERT,
//! 384 dimensions) run with candle on the CPU, from the sentence-transformers
//! files `model.safetensors`, `tokenizer.json` and `config.json` that
//! `make models` puts in `models/all-MiniLM-L6-v2/`.
//!
//! Pooling is sentence-transformers': the mean of the last hidden states over
//! the tokens whose attention mask is 1, then L2 normalisation. The shipped
//! `tokenizer.json` pads every input to 128 tokens; padding to the longest
//! text of a batch instead gives the same vectors (padding is masked out of
//! attention and of the mean) for far less work. Inputs are truncated to
//! [`MAX_TOKENS`] word pieces, sentence-transformers' `max_seq_length` for
//! this model. Texts are sorted by length and run [`DEFAULT_BATCH`] per
//! forward pass; candle's matrix products use one thread per core
//! (`RAYON_NUM_THREADS` overrides).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{Embedder, l2_normalize};
use crate::error::{Error, Result};

/// Output dimensions of all-MiniLM-L6-v2.
pub const DIMS: usize = 384;
/// Longest input in word pieces (special tokens included); longer texts are
/// truncated, as sentence-transformers does for this model.
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass.
pub const DEFAULT_BATCH: usize = 32;
/// Where `make models` puts the model, relative to the repository root.
pub const DEFAULT_MODEL_DIR: &str = "models/all-MiniLM-L6-v2";

pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    name: String,
    batch: usize,
}

impl MiniLmEmbedder {
    /// Loads the model from `model_dir` (which must hold `config.json`,
    /// `tokenizer.json` and `model.safetensors`).
    pub fn load(model_dir: &Path) -> Result<Self> {
        let missing: Vec<&str> =
            ["config.json", "tokenizer.json", "model.safetensors"].into_iter().filter(|f| !model_dir.join(f).is_file()).collect();
        if !missing.is_empty() {
            return Err(model_error(model_dir, format!("missing {} (run `make models` first, or pass --model-dir)", missing.join(", "))));
        }
        let config_path = model_dir.join("config.json");
        let config_text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let config: BertConfig =
            serde_json::from_str(&config_text).map_err(|e| model_error(model_dir, format!("config.json is not a BERT config: {e}")))?;
        if config.hidden_size != DIMS {
            return Err(model_error(model_dir, format!("config.json has hidden_size {}, expected {DIMS}", config.hidden_size)));
        }

        let mut tokenizer = Tokenizer::from_file(model_dir.join("tokenizer.json"))
            .map_err(|e| model_error(model_dir, format!("read tokenizer.json: {e}")))?;
        let pad_id = u32::try_from(config.pad_token_id).map_err(|_| model_error(model_dir, "pad_token_id out of range".to_string()))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token: "[PAD]".to_string(),
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS.min(config.max_position_embeddings),
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(model_dir, format!("set truncation: {e}")))?;

        let device = Device::Cpu;
        let weights_path = model_dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| model_error(model_dir, format!("read model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config).map_err(|e| model_error(model_dir, format!("load BERT weights: {e}")))?;

        Ok(MiniLmEmbedder { model, tokenizer, device, name: model_name(model_dir), batch: DEFAULT_BATCH })
    }

    /// Sets how many texts go through one forward pass (at least 1).
    pub fn with_batch_size(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// The id an embedder loaded from `model_dir` reports, without loading it
    /// (replay needs the id to find its recorded vectors, not the model).
    pub fn id_for(model_dir: &Path) -> String {
        format!("minilm:{}", model_name(model_dir))
    }

    /// Threads candle's CPU matrix products use.
    pub fn threads() -> usize {
        candle_core::utils::get_num_threads()
    }

    /// One forward pass over `texts`, which share a padded length.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| Error::Embed(format!("tokenize: {e}")))?;
        let rows = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        for enc in &encodings {
            ids.extend_from_slice(enc.get_ids());
            mask.extend_from_slice(enc.get_attention_mask());
        }
        self.forward(ids, mask, rows, len).map_err(|e| Error::Embed(format!("minilm forward pass: {e}")))
    }

    fn forward(&self, ids: Vec<u32>, mask: Vec<u32>, rows: usize, len: usize) -> candle_core::Result<Vec<Vec<f32>>> {
        let ids = Tensor::from_vec(ids, (rows, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, len), &self.device)?;
        let type_ids = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?;
        let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1f32, f32::MAX)?;
        let mut out = summed.broadcast_div(&counts)?.to_vec2::<f32>()?;
        for v in &mut out {
            l2_normalize(v);
        }
        Ok(out)
    }
}

fn model_name(model_dir: &Path) -> String {
    let dir: PathBuf = model_dir.components().collect();
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty()).unwrap_or_else(|| "all-MiniLM-L6-v2".to_string())
}

fn model_error(model_dir: &Path, message: String) -> Error {
    Error::EmbedModel { path: model_dir.to_path_buf(), message }
}

impl Embedder for MiniLmEmbedder {
    fn id(&self) -> String {
        format!("minilm:{}", self.name)
    }

    fn dims(&self) -> usize {
        DIMS
    }

    fn embed(&self, texts: &[&str], _source: &str) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, v) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_model_files_name_the_make_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("config.json"), "{}").expect("write");
        let err = MiniLmEmbedder::load(dir.path()).err().expect("load must fail").to_string();
        assert!(err.contains("tokenizer.json, model.safetensors"), "{err}");
        assert!(err.contains("make models"), "{err}");
    }

    #[test]
    fn bad_config_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        for f in ["tokenizer.json", "model.safetensors"] {
            std::fs::write(dir.path().join(f), "x").expect("write");
        }
        std::fs::write(dir.path().join("config.json"), "{\"hidden_size\": 384}").expect("write");
        let err = MiniLmEmbedder::load(dir.path()).err().expect("load must fail").to_string();
        assert!(err.contains("not a BERT config"), "{err}");
    }

    #[test]
    fn id_names_the_model_directory() {
        assert_eq!(MiniLmEmbedder::id_for(Path::new("models/all-MiniLM-L6-v2/")), "minilm:all-MiniLM-L6-v2");
        assert_eq!(MiniLmEmbedder::id_for(Path::new("/opt/m/paraphrase-x")), "minilm:paraphrase-x");
    }
}
