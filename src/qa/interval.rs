//! Percentile bootstrap intervals that resample clusters (conversations):
//! memory carries across the episodes and items of one conversation, so
//! its items are not independent draws, and a dataset of 5–10
//! conversations has as many independent units. Each replicate draws as
//! many clusters as there are, with replacement, and pools their items.

/// The QA section's bootstrap: resamples and seed (fixed: the figures
/// reproduce).
pub const RESAMPLES: usize = 2000;
pub const SEED: u64 = 0x5EED_0026;

/// SplitMix64: a small, seedable generator (the bootstraps' draws).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (Lemire's multiply-shift; `n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// One cluster's contribution: the sum of the values of its items and
/// how many items it has.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cluster {
    pub sum: f64,
    pub n: f64,
}

/// Groups `(cluster key, value)` pairs into [`Cluster`]s, in key order.
pub fn clusters<'a>(values: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<Cluster> {
    let mut by: std::collections::BTreeMap<&str, Cluster> = std::collections::BTreeMap::new();
    for (k, v) in values {
        let c = by.entry(k).or_default();
        c.sum += v;
        c.n += 1.0;
    }
    by.into_values().collect()
}

/// The linear-interpolation quantile `p` of sorted `v`.
fn quantile(v: &[f64], p: f64) -> f64 {
    let h = (v.len() - 1) as f64 * p;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (h - h.floor())
}

/// The 95% percentile interval of the pooled mean (Σ sum / Σ n) when
/// clusters are drawn with replacement; `None` with fewer than two
/// clusters (nothing to resample) or no item.
pub fn interval(clusters: &[Cluster], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    if clusters.len() < 2 || resamples == 0 || clusters.iter().all(|c| c.n == 0.0) {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut means = Vec::with_capacity(resamples);
    let k = clusters.len() as u64;
    for _ in 0..resamples {
        let (mut sum, mut n) = (0.0, 0.0);
        for _ in 0..clusters.len() {
            let c = clusters[rng.below(k) as usize];
            sum += c.sum;
            n += c.n;
        }
        if n > 0.0 {
            means.push(sum / n);
        }
    }
    if means.is_empty() {
        return None;
    }
    means.sort_by(f64::total_cmp);
    Some((quantile(&means, 0.025), quantile(&means, 0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clustering_by_conversation_widens_the_interval_when_conversations_differ() {
        // Four conversations of two episodes each, five items per episode:
        // conversations a and b answer everything, c and d nothing. Within a
        // conversation the episodes agree, so resampling episodes treats 8
        // units as independent where there are 4.
        let mut items = Vec::new();
        for (conv, hit) in [("a", 1.0), ("b", 1.0), ("c", 0.0), ("d", 0.0)] {
            for ep in 0..2 {
                for _ in 0..5 {
                    items.push((conv, format!("{conv}{ep}"), hit));
                }
            }
        }
        let by_conv = clusters(items.iter().map(|(c, _, v)| (*c, *v)));
        let by_episode = clusters(items.iter().map(|(_, e, v)| (e.as_str(), *v)));
        let by_item: Vec<Cluster> = items.iter().map(|(_, _, v)| Cluster { sum: *v, n: 1.0 }).collect();
        assert_eq!((by_conv.len(), by_episode.len()), (4, 8));
        let width = |c: &[Cluster]| interval(c, RESAMPLES, SEED).map(|(lo, hi)| hi - lo).unwrap();
        let (conv, episode, item) = (width(&by_conv), width(&by_episode), width(&by_item));
        assert!(conv > episode && episode > item, "conversation {conv}, episode {episode}, item {item}");
        // Four clusters of 0s and 1s: the pooled mean moves in quarters, so
        // the interval spans most of [0, 1]; forty independent items do not.
        assert!(conv >= 0.7 && item < 0.4, "conversation {conv}, item {item}");
        let (lo, hi) = interval(&by_conv, RESAMPLES, SEED).unwrap();
        assert!(lo <= 0.5 && 0.5 <= hi);
    }

    #[test]
    fn one_cluster_has_no_interval_and_the_draws_reproduce() {
        assert_eq!(interval(&[Cluster { sum: 3.0, n: 4.0 }], RESAMPLES, SEED), None);
        let c = clusters([("a", 1.0), ("b", 0.0), ("b", 1.0), ("c", 0.0)]);
        assert_eq!(c, vec![Cluster { sum: 1.0, n: 1.0 }, Cluster { sum: 1.0, n: 2.0 }, Cluster { sum: 0.0, n: 1.0 }]);
        assert_eq!(interval(&c, 500, 7), interval(&c, 500, 7));
        assert_eq!(quantile(&[0.0, 1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
        assert_eq!(quantile(&[0.0, 1.0], 0.25), 0.25);
    }
}
