//! The statistics a comparison reports: means with 95% intervals (exact Student t quantiles),
//! pass rates with 95% Wilson score intervals, pass@k and pass^k over repeats, and the
//! two-sided sign test over per-case wins and losses (with the fewest cases it can ever
//! reject at).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The two-sided level of the intervals and the significance level of the sign test.
pub const ALPHA: f64 = 0.05;

/// The 97.5th percentile of the standard normal distribution (two-sided 95%).
const Z_975: f64 = 1.959_963_984_540_054;

/// A mean with its 95% confidence interval (Student's t).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interval {
    /// The mean.
    pub mean: f64,
    /// Half the interval's width (0 with fewer than two values); `halfWidth` on the wire
    /// (`half_width` is read too, as reports before 0.x wrote it).
    #[serde(alias = "half_width")]
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
    /// // t(0.975, 2) = 4.302652729749464, s = 1, n = 3
    /// assert!((i.half_width - 4.302652729749464 / 3f64.sqrt()).abs() < 1e-9);
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

/// The 97.5th percentile of Student's t with `df` degrees of freedom (two-sided 95%), exact
/// to about 1e-12; NaN for 0 degrees of freedom.
///
/// Below [`LARGE_DF`] degrees of freedom it is `statrs`' inverse CDF (through the inverse
/// regularized incomplete beta function). From there on that inverse loses digits (1e-5 at a
/// hundred thousand), and the Cornish–Fisher expansion of t about the normal quantile
/// (Abramowitz & Stegun 26.7.5, four terms in 1/df) is exact to 1e-15 instead.
///
/// ```
/// let t = openharness_eval::stats::t_975(10);
/// assert!((t - 2.228138851986274).abs() < 1e-9);
/// ```
pub fn t_975(df: usize) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    if df >= LARGE_DF {
        return t_975_expansion(df as f64);
    }
    // `StudentsT::new` refuses only a non-positive scale or freedom, which these are not.
    match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(t) => t.inverse_cdf(1.0 - ALPHA / 2.0),
        Err(_) => f64::NAN,
    }
}

/// The degrees of freedom from which [`t_975`] uses the expansion.
const LARGE_DF: usize = 1000;

/// t(0.975, v) = z + g1(z)/v + g2(z)/v² + g3(z)/v³ + g4(z)/v⁴ (Abramowitz & Stegun 26.7.5).
fn t_975_expansion(v: f64) -> f64 {
    let z = Z_975;
    let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
    let g1 = (z3 + z) / 4.0;
    let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
    let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
    let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
    z + g1 / v + g2 / (v * v) + g3 / v.powi(3) + g4 / v.powi(4)
}

/// A pass rate with its 95% Wilson score interval: unlike the normal approximation it stays
/// inside [0, 1] and is not empty at 0 or n passes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proportion {
    /// Share of the runs that passed.
    pub rate: f64,
    /// The interval's low end.
    pub low: f64,
    /// The interval's high end.
    pub high: f64,
    /// Runs that passed.
    pub passed: u64,
    /// Runs counted.
    pub n: u64,
}

impl Proportion {
    /// `passed` of `n` runs with the 95% Wilson score interval; `None` for no runs (or more
    /// passes than runs).
    ///
    /// ```
    /// let p = openharness_eval::stats::Proportion::wilson(8, 10).unwrap();
    /// assert_eq!(p.rate, 0.8);
    /// assert!((p.low - 0.490_162_47).abs() < 1e-8 && (p.high - 0.943_317_85).abs() < 1e-8);
    /// ```
    pub fn wilson(passed: u64, n: u64) -> Option<Self> {
        if n == 0 || passed > n {
            return None;
        }
        let (x, n_f) = (passed as f64, n as f64);
        let p = x / n_f;
        let z2 = Z_975 * Z_975;
        let denominator = 1.0 + z2 / n_f;
        let centre = (p + z2 / (2.0 * n_f)) / denominator;
        let spread = Z_975 / denominator * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt();
        Some(Self {
            rate: p,
            low: (centre - spread).max(0.0),
            high: (centre + spread).min(1.0),
            passed,
            n,
        })
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

/// The smallest p-value [`sign_test`] can give with `n` cases that are not ties: every one
/// won (or every one lost), `2 · 0.5^n`.
///
/// ```
/// use openharness_eval::stats::smallest_sign_test_p;
/// assert_eq!(smallest_sign_test_p(2), 0.5);
/// assert!((smallest_sign_test_p(5) - 0.0625).abs() < 1e-12);
/// ```
pub fn smallest_sign_test_p(n: u64) -> f64 {
    sign_test(n, 0)
}

/// The fewest cases (not ties) with which the two-sided sign test can reject at `alpha`: 6 at
/// 0.05 (`2 · 0.5^6 = 0.03125`; with 5 the best is 0.0625).
///
/// ```
/// assert_eq!(openharness_eval::stats::fewest_cases_to_reject(0.05), 6);
/// assert_eq!(openharness_eval::stats::fewest_cases_to_reject(0.01), 8);
/// ```
pub fn fewest_cases_to_reject(alpha: f64) -> u64 {
    (1..=64)
        .find(|&n| smallest_sign_test_p(n) < alpha)
        .unwrap_or(u64::MAX)
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
    fn t_quantiles_are_exact() {
        // Reference values: the t CDF's root at 0.975 to 40 digits (mpmath; R's qt agrees).
        for (df, expected) in [
            (1, 12.706_204_736_174_705),
            (2, 4.302_652_729_749_464),
            (3, 3.182_446_305_283_71),
            (5, 2.570_581_835_636_316),
            (10, 2.228_138_851_986_274),
            (30, 2.042_272_456_301_238),
            (100, 1.983_971_518_523_552),
            (999, 1.962_341_461_133_45),
            (1000, 1.962_339_080_826_408),
            (100_000, 1.959_987_707_534_61),
            (1_000_000, 1.959_966_356_814_107),
        ] {
            let t = t_975(df);
            assert!(
                (t - expected).abs() < 1e-9,
                "df {df}: {t} against {expected}"
            );
        }
        assert!(t_975(0).is_nan());
        // It falls towards the normal quantile as the degrees of freedom grow.
        let mut last = f64::INFINITY;
        for df in (1..2000).chain([10_000, 100_000]) {
            let t = t_975(df);
            assert!(t < last && t > Z_975, "df {df}: {t}");
            last = t;
        }
        assert!((t_975(usize::MAX) - Z_975).abs() < 1e-12);
    }

    #[test]
    fn a_mean_interval_uses_the_exact_quantile() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample sd sqrt(32/7), n 8, t(0.975, 7).
        let values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let i = Interval::of(&values).unwrap();
        assert_eq!((i.mean, i.n), (5.0, 8));
        let t7 = 2.364_624_251_592_785;
        let expected = t7 * (32.0f64 / 7.0).sqrt() / 8f64.sqrt();
        assert!((i.half_width - expected).abs() < 1e-9, "{}", i.half_width);
        assert!((i.half_width - 1.787_487_918_236_211).abs() < 1e-9);
        // One value: no width; the wire field is camelCase, and the old name still reads.
        assert_eq!(Interval::of(&[3.0]).unwrap().half_width, 0.0);
        let wire = serde_json::to_value(i).unwrap();
        assert_eq!(wire["halfWidth"], serde_json::json!(i.half_width));
        assert!(wire.get("half_width").is_none());
        let old: Interval =
            serde_json::from_str(r#"{"mean": 1.0, "half_width": 0.5, "n": 2}"#).unwrap();
        assert_eq!(old.half_width, 0.5);
    }

    #[test]
    fn wilson_intervals_match_the_formula() {
        // 8 of 10: centre (0.8 + z²/20) / (1 + z²/10), spread z/(1 + z²/10) ·
        // sqrt(0.8·0.2/10 + z²/400), z = 1.959963984540054.
        let p = Proportion::wilson(8, 10).unwrap();
        assert_eq!((p.rate, p.passed, p.n), (0.8, 8, 10));
        assert!((p.low - 0.490_162_471_536_641_7).abs() < 1e-9, "{}", p.low);
        assert!(
            (p.high - 0.943_317_848_545_624_7).abs() < 1e-9,
            "{}",
            p.high
        );
        // At the edges it stays inside [0, 1] and is not empty.
        let none = Proportion::wilson(0, 5).unwrap();
        assert_eq!(none.low, 0.0);
        assert!(
            (none.high - 0.434_482_464_783_174_8).abs() < 1e-9,
            "{}",
            none.high
        );
        let all = Proportion::wilson(5, 5).unwrap();
        assert_eq!(all.high, 1.0);
        assert!(
            (all.low - 0.565_517_535_216_825_2).abs() < 1e-9,
            "{}",
            all.low
        );
        assert_eq!(Proportion::wilson(0, 0), None);
        assert_eq!(Proportion::wilson(3, 2), None);
    }

    #[test]
    fn too_few_cases_can_never_reject() {
        assert_eq!(smallest_sign_test_p(2), 0.5);
        assert!((smallest_sign_test_p(6) - 0.031_25).abs() < 1e-12);
        assert_eq!(fewest_cases_to_reject(ALPHA), 6);
        assert!(smallest_sign_test_p(5) >= ALPHA);
    }
}
