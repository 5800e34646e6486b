//! The `Embedder` seam: every vector the pipeline compares comes through it.
//! The built-in hashed n-gram embedder needs no model; real models and the
//! recorded cache plug in behind the same trait.

pub mod hashed;

use crate::error::Result;

/// Turns texts into unit vectors. Implementations must be deterministic for a
/// given id, or sit behind a recorded cache that makes them so.
pub trait Embedder: Send + Sync {
    /// Names the embedder and its model (`hashed:char3+word:256`); recorded in
    /// the run manifest and part of the embedding cache key.
    fn id(&self) -> String;
    fn dims(&self) -> usize;
    /// Embeds `texts` in order. `source` says where the texts come from
    /// (conversation and episode) for error messages.
    fn embed(&self, texts: &[&str], source: &str) -> Result<Vec<Vec<f32>>>;
}

/// Cosine of two vectors; 0 when either is zero. Vectors from an `Embedder`
/// are unit length, so this is their dot product.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let mut dot = 0f64;
    let mut na = 0f64;
    let mut nb = 0f64;
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if n > 0.0 {
        for x in v.iter_mut() {
            *x = (f64::from(*x) / n) as f32;
        }
    }
}
