//! The statistics a comparison reports: means with 95% intervals, pass@k and pass^k over
//! repeats, and the two-sided sign test over per-case wins and losses.

use serde::Serialize;

/// A mean with its 95% confidence interval (Student's t).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The mean.
    pub mean: f64,
    /// Half the interval's width (0 with fewer than two values).
    pub half_width: f64,
    /// How many values.
    pub n: usize,
}

impl Interval {
    /// The mean of `values` and its 95% interval; `None` for no values.
    ///
    /// ```
    /// let i = openharness_eval::stats::Interval::of(&[1.0, 2.0, 3.0]).unwrap();
    /// assert_eq!(i.mean, 2.0);
    /// assert!((i.half_width - 2.484).abs() < 0.001); // t(0.975, 2) = 4.303, s = 1, n = 3
    /// ```
    pub fn of(values: &[f64]) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Some(Self {
                mean,
                half_width: 0.0,
                n,
            });
        }
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half_width = t_975(n - 1) * (variance / n as f64).sqrt();
        Some(Self {
            mean,
            half_width,
            n,
        })
    }

    /// The interval's low end.
    pub fn low(&self) -> f64 {
        self.mean - self.half_width
    }

    /// The interval's high end.
    pub fn high(&self) -> f64 {
        self.mean + self.half_width
    }
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom (two-sided 95%).
fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000 + (2.042 - 2.000) * (60 - df) as f64 / 30.0,
        61..=120 => 1.980 + (2.000 - 1.980) * (120 - df) as f64 / 60.0,
        _ => 1.960,
    }
}

/// `ln C(n, k)`.
fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

/// pass@k: the chance that at least one of `k` runs drawn (without replacement) from `n`
/// runs, `c` of which passed, passes — the unbiased estimator of Chen et al. (2021).
/// `None` when `k` is 0 or more than `n`.
///
/// ```
/// use openharness_eval::stats::pass_at_k;
/// assert_eq!(pass_at_k(5, 0, 1), Some(0.0));
/// assert_eq!(pass_at_k(5, 5, 3), Some(1.0));
/// assert!((pass_at_k(5, 1, 1).unwrap() - 0.2).abs() < 1e-12);
/// assert!((pass_at_k(5, 2, 2).unwrap() - 0.7).abs() < 1e-12); // 1 - C(3,2)/C(5,2)
/// ```
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    Some(1.0 - (ln_choose(n - c, k) - ln_choose(n, k)).exp())
}

/// pass^k: the chance that all of `k` runs drawn from `n`, `c` of which passed, pass — how
/// reliably a variant passes, not just whether it can. `None` when `k` is 0 or more than `n`.
///
/// ```
/// use openharness_eval::stats::pass_hat_k;
/// assert_eq!(pass_hat_k(5, 5, 5), Some(1.0));
/// assert_eq!(pass_hat_k(5, 4, 5), Some(0.0));
/// assert!((pass_hat_k(5, 4, 2).unwrap() - 0.6).abs() < 1e-12); // C(4,2)/C(5,2)
/// ```
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if c < k {
        return Some(0.0);
    }
    Some((ln_choose(c, k) - ln_choose(n, k)).exp())
}

/// The two-sided exact sign test: the chance of a split at least this uneven between `wins`
/// and `losses` (ties left out) if neither side were better. 1.0 with no wins or losses.
///
/// ```
/// use openharness_eval::stats::sign_test;
/// assert_eq!(sign_test(0, 0), 1.0);
/// assert!((sign_test(10, 0) - 2.0 / 1024.0).abs() < 1e-12);
/// assert!((sign_test(5, 5) - 1.0).abs() < 1e-12);
/// assert!(sign_test(15, 5) < 0.05);
/// ```
pub fn sign_test(wins: u64, losses: u64) -> f64 {
    let n = wins + losses;
    if n == 0 {
        return 1.0;
    }
    let extreme = wins.min(losses);
    // P(X <= extreme) for X ~ Binomial(n, 1/2), doubled.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let tail: f64 = (0..=extreme)
        .map(|i| (ln_choose(n, i) + ln_half_n).exp())
        .sum();
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn pass_metrics_are_probabilities_ordered_as_they_should_be(n in 1u64..40, c in 0u64..40, k in 1u64..40) {
            let c = c.min(n);
            let k = k.min(n);
            let at = pass_at_k(n, c, k).unwrap();
            let hat = pass_hat_k(n, c, k).unwrap();
            prop_assert!((0.0..=1.0 + 1e-9).contains(&at));
            prop_assert!((0.0..=1.0 + 1e-9).contains(&hat));
            // All k pass is never likelier than at least one passes.
            prop_assert!(hat <= at + 1e-9);
            // With k = 1 both are the pass rate.
            let rate = c as f64 / n as f64;
            prop_assert!((pass_at_k(n, c, 1).unwrap() - rate).abs() < 1e-9);
            prop_assert!((pass_hat_k(n, c, 1).unwrap() - rate).abs() < 1e-9);
        }

        #[test]
        fn the_sign_test_is_symmetric_and_a_probability(w in 0u64..200, l in 0u64..200) {
            let p = sign_test(w, l);
            prop_assert!((0.0..=1.0).contains(&p));
            prop_assert!((p - sign_test(l, w)).abs() < 1e-12);
        }

        #[test]
        fn an_interval_holds_its_mean(values in proptest::collection::vec(-1e6f64..1e6, 1..50)) {
            let interval = Interval::of(&values).unwrap();
            prop_assert!(interval.low() <= interval.mean && interval.mean <= interval.high());
            prop_assert!(values.iter().any(|v| *v <= interval.mean + 1e-6));
        }
    }

    #[test]
    fn the_t_quantile_falls_to_the_normal_one() {
        assert!((t_975(1) - 12.706).abs() < 1e-9);
        assert!((t_975(30) - 2.042).abs() < 1e-9);
        assert!((t_975(60) - 2.000).abs() < 1e-9);
        assert!((t_975(1000) - 1.960).abs() < 1e-9);
        let mut last = f64::INFINITY;
        for df in 1..200 {
            assert!(t_975(df) <= last, "df {df}");
            last = t_975(df);
        }
    }
}
