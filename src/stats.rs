//! Statistics over repetitions, written by hand: a handful of formulas, each tested against
//! values computed independently.

/// Summary of a set of measurements (e.g. faults/s over repetitions).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n-1); 0 for n = 1.
    pub stddev: f64,
    /// stddev / mean, percent.
    pub cv_pct: f64,
    pub min: f64,
    pub max: f64,
    /// (max - min) / mean, percent, as in the 2011 exim tables.
    pub spread_pct: f64,
    /// perf stat's `( +- x% )`: 100 * stddev / sqrt(n) / mean, the relative standard error.
    pub rse_pct: f64,
}

pub fn summarize(values: &[f64]) -> Option<Summary> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    let stddev =
        if n > 1 { (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
    let relative = |x: f64| if mean != 0.0 { 100.0 * x / mean } else { 0.0 };
    Some(Summary {
        n,
        mean,
        median,
        stddev,
        cv_pct: relative(stddev),
        min: sorted[0],
        max: sorted[n - 1],
        spread_pct: relative(sorted[n - 1] - sorted[0]),
        rse_pct: relative(stddev / (n as f64).sqrt()),
    })
}

/// The overhead of a placement from its rate ratio to the baseline (placement / root): the
/// placement's cost per fault over the baseline's, root rate / placement rate, as the 2009
/// post's 109%. None for a ratio that is not a positive number.
pub fn overhead(ratio_vs_baseline: f64) -> Option<f64> {
    (ratio_vs_baseline > 0.0 && ratio_vs_baseline.is_finite()).then(|| 1.0 / ratio_vs_baseline)
}

/// Two-sided 95% Student t quantile for `df` degrees of freedom.
pub fn t_quantile_95(df: usize) -> f64 {
    // t(0.975, df) for df = 1..=30, from the standard table.
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        // Beyond 30 the Cornish-Fisher expansion around z = 1.959964 is accurate to 1e-3.
        _ => {
            let z = 1.959964_f64;
            let d = df as f64;
            z + (z.powi(3) + z) / (4.0 * d) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// Mean of per-repetition ratios with its 95% confidence interval (Student t).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RatioInterval {
    pub n: usize,
    pub mean: f64,
    /// None with a single repetition: no interval can be given.
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl RatioInterval {
    /// Whether the interval lies wholly on one side of `value` (1.0 = no difference).
    pub fn excludes(&self, value: f64) -> bool {
        match (self.low, self.high) {
            (Some(low), Some(high)) => value < low || value > high,
            _ => false,
        }
    }
}

pub fn ratio_interval(ratios: &[f64]) -> Option<RatioInterval> {
    let summary = summarize(ratios)?;
    if summary.n < 2 {
        return Some(RatioInterval { n: summary.n, mean: summary.mean, low: None, high: None });
    }
    let half_width = t_quantile_95(summary.n - 1) * summary.stddev / (summary.n as f64).sqrt();
    Some(RatioInterval {
        n: summary.n,
        mean: summary.mean,
        low: Some(summary.mean - half_width),
        high: Some(summary.mean + half_width),
    })
}

/// Welch's unequal-variance t-test of mean(b) against mean(a).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Welch {
    pub t: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
    /// |t| beyond the two-sided 95% quantile at floor(df) (conservative).
    pub significant: bool,
}

/// None when either side has fewer than two values (no variance to test with).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (sa, sb) = (summarize(a)?, summarize(b)?);
    if sa.n < 2 || sb.n < 2 {
        return None;
    }
    let (va, vb) = (sa.stddev.powi(2) / sa.n as f64, sb.stddev.powi(2) / sb.n as f64);
    let se = (va + vb).sqrt();
    if se == 0.0 {
        // Identical constants on both sides: no spread, so any difference is exact.
        return Some(Welch { t: f64::INFINITY, df: f64::INFINITY, significant: sa.mean != sb.mean });
    }
    let t = (sb.mean - sa.mean) / se;
    let df = (va + vb).powi(2) / (va.powi(2) / (sa.n - 1) as f64 + vb.powi(2) / (sb.n - 1) as f64);
    Some(Welch { t, df, significant: t.abs() > t_quantile_95(df.floor().max(1.0) as usize) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sum of squares 32, sample variance 32/7.
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(s.cv_pct, 100.0 * (32.0f64 / 7.0).sqrt() / 5.0, 1e-9));
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert!(close(s.spread_pct, 140.0, 1e-9));
        assert!(close(s.rse_pct, 100.0 * (32.0f64 / 7.0).sqrt() / 8f64.sqrt() / 5.0, 1e-9));
    }

    #[test]
    fn single_and_empty_inputs() {
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[3.0]).unwrap();
        assert_eq!((s.mean, s.median, s.stddev, s.rse_pct), (3.0, 3.0, 0.0, 0.0));
        let r = ratio_interval(&[1.1]).unwrap();
        assert_eq!((r.low, r.high), (None, None));
        assert!(!r.excludes(1.0));
    }

    #[test]
    fn t_quantiles_follow_the_table_and_converge_to_z() {
        assert_eq!(t_quantile_95(1), 12.706);
        assert_eq!(t_quantile_95(4), 2.776);
        assert_eq!(t_quantile_95(30), 2.042);
        assert!(close(t_quantile_95(40), 2.021, 2e-3));
        assert!(close(t_quantile_95(120), 1.980, 2e-3));
        assert!(close(t_quantile_95(100_000), 1.960, 1e-3));
    }

    #[test]
    fn welch_matches_hand_computation() {
        // a: mean 3, variance 2.5; b: mean 6, variance 10; n = 5 each.
        // se = sqrt(0.5 + 2) = 1.5811; t = 3 / se = 1.8974;
        // df = 2.5^2 / (0.5^2/4 + 2^2/4) = 6.25 / 1.0625 = 5.882 -> t(5) = 2.571: not significant.
        let w = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(close(w.t, 3.0 / 2.5f64.sqrt(), 1e-12));
        assert!(close(w.df, 6.25 / 1.0625, 1e-12));
        assert!(!w.significant);
        // Tight samples far apart are significant, in either direction.
        let slower = welch(&[100.0, 101.0, 99.0], &[90.0, 91.0, 89.0]).unwrap();
        assert!(slower.significant && slower.t < 0.0);
        let faster = welch(&[90.0, 91.0, 89.0], &[100.0, 101.0, 99.0]).unwrap();
        assert!(faster.significant && faster.t > 0.0);
        assert_eq!(welch(&[1.0], &[2.0, 3.0]), None);
        assert!(welch(&[5.0, 5.0], &[6.0, 6.0]).unwrap().significant);
        assert!(!welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap().significant);
    }

    #[test]
    fn ratio_interval_uses_student_t() {
        // Ratios 1.08, 1.10, 1.12: mean 1.10, stddev 0.02, half-width 4.303 * 0.02 / sqrt(3).
        let r = ratio_interval(&[1.08, 1.10, 1.12]).unwrap();
        let half = 4.303 * 0.02 / 3f64.sqrt();
        assert!(close(r.mean, 1.10, 1e-12));
        assert!(close(r.low.unwrap(), 1.10 - half, 1e-9));
        assert!(close(r.high.unwrap(), 1.10 + half, 1e-9));
        assert!(r.excludes(1.0));
        let wide = ratio_interval(&[0.9, 1.1]).unwrap();
        assert!(!wide.excludes(1.0));
    }
}
