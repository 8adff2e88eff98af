//! Statistics over rounds and generations. Student's t (its quantile and p-value) is statrs's;
//! what is faultscale's own (the trimmed mean per cgroup instance, the interval over instances
//! or one instance's blocks, Welch's difference, Holm) is written here once, each tested against
//! values computed independently.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Summary of a set of measurements (e.g. faults/s over rounds).
#[derive(Debug, Clone, Copy, PartialEq)]
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

impl Summary {
    /// A spread figure where there is a spread to measure: None for one value, not a 0 that
    /// reads as "perfectly steady" (the table and compare show `-`, the JSON null).
    pub fn measured(&self, spread: f64) -> Option<f64> {
        (self.n > 1).then_some(spread)
    }
}

/// As JSON: stddev, cv_pct, spread_pct and rse_pct are null for one value (`Summary::measured`).
impl serde::Serialize for Summary {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Shown {
            n: usize,
            mean: f64,
            median: f64,
            stddev: Option<f64>,
            cv_pct: Option<f64>,
            min: f64,
            max: f64,
            spread_pct: Option<f64>,
            rse_pct: Option<f64>,
        }
        let measured = |spread: f64| self.measured(spread);
        Shown {
            n: self.n,
            mean: self.mean,
            median: self.median,
            stddev: measured(self.stddev),
            cv_pct: measured(self.cv_pct),
            min: self.min,
            max: self.max,
            spread_pct: measured(self.spread_pct),
            rse_pct: measured(self.rse_pct),
        }
        .serialize(serializer)
    }
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

/// The throughput ratio turned around: baseline rate / placement rate from placement /
/// baseline, as the 2009 post's 109% (on a dedicated CPU it equals the cost ratio the
/// overhead is). None for a ratio that is not a positive number.
pub fn inverse_rate_ratio(ratio_vs_baseline: f64) -> Option<f64> {
    (ratio_vs_baseline > 0.0 && ratio_vs_baseline.is_finite()).then(|| 1.0 / ratio_vs_baseline)
}

/// Nanoseconds one task spends per unit (fault, loop, op) when `tasks` tasks together do
/// `rate` units a second; None for a rate of zero, where there is no time per unit.
pub fn ns_per_unit(rate: f64, tasks: usize) -> Option<f64> {
    (rate > 0.0).then(|| 1e9 * tasks as f64 / rate)
}

/// will-it-scale's `linear` comparison over a sweep of (task count, rate): the rate at `tasks`
/// over the smallest count's rate scaled to `tasks`. None without a sweep (one count), for a
/// count not in it, or where the smallest count's rate is zero.
pub fn vs_linear(sweep: &[(usize, f64)], tasks: usize) -> Option<f64> {
    let &(_, rate) = sweep.iter().find(|(t, _)| *t == tasks)?;
    let &(base_tasks, base_rate) = sweep.iter().min_by_key(|(t, _)| *t)?;
    (sweep.len() > 1 && base_rate > 0.0).then(|| rate / (base_rate * tasks as f64 / base_tasks as f64))
}

/// Two-sided 95% Student t quantile for `df` degrees of freedom (infinite at 0: no interval).
pub fn t_quantile_95(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        _ => t_quantile_95_at(df as f64),
    }
}

/// The two-sided 95% t quantile at a fractional `df` (Welch-Satterthwaite's), continuous in
/// df: flooring df would jump (df 4.0 gives 2.776 but 3.9999999 gives 3.182, so the same rates
/// written with a digit more or less, a CSV and a JSON of one run, got intervals 15% apart).
/// Infinite df (or NaN), the normal's; below 1 or beyond `MAX_DF`, as there (`students_t`).
pub fn t_quantile_95_at(df: f64) -> f64 {
    match df.is_finite() {
        true => students_t(df).inverse_cdf(0.975),
        false => Normal::standard().inverse_cdf(0.975),
    }
}

/// The two-sided p-value of Student's t with `df` degrees of freedom (fractional allowed;
/// infinite, the normal's; below 1 or beyond `MAX_DF`, as there, as `t_quantile_95_at`, so
/// that a 95% interval excludes 0 exactly where p < 0.05).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    // The upper tail directly (sf, not 1 - cdf, which loses a far tail's digits).
    let tail = match df.is_finite() {
        true => students_t(df).sf(t.abs()),
        false => Normal::standard().sf(t.abs()),
    };
    (2.0 * tail).clamp(0.0, 1.0)
}

/// The largest df Student's t is taken at. statrs 0.19.1's inverse_cdf, exact to 1e-12 up to
/// here (against scipy), loses digits beyond (t(0.975) at 1e5 df off by 7e-6, at 1e7 by 0.13)
/// and from 1e8 does not return (its inverse incomplete beta at a huge first parameter). A run
/// has fewer blocks than this; a larger df is taken as this one's, a quantile at most 1.2e-4
/// (relative) wider than its own, so the interval errs wide and stays continuous in df.
const MAX_DF: f64 = 1e4;

/// The standard Student t at `df` clamped to 1..=`MAX_DF`: every df faultscale forms is at
/// least 1 (units less one, a block count's floor of 1, Welch's between its sides'), and statrs
/// refuses a df that is not positive. A finite df; infinite is the caller's (the normal).
fn students_t(df: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, df.clamp(1.0, MAX_DF)).expect("df between 1 and MAX_DF")
}

/// A ratio's estimate with its 95% interval: exp of the logs' `UnitMean` (over units of
/// trimmed means, as `overhead_interval` makes it) and of its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RatioInterval {
    pub n: usize,
    pub mean: f64,
    /// None with a single value: no interval can be given.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The units the interval's spread came from: cgroup instances (crew generations) where
    /// the run made two or more, else 1 (the slices of one instance, which say nothing of the
    /// next run's).
    pub units: usize,
    /// The standard error of the mean log and its degrees of freedom: what `compare` needs to
    /// test one run against another without the slices.
    pub log_standard_error: Option<f64>,
    pub df: Option<f64>,
}

impl RatioInterval {
    /// Whether the interval lies wholly on one side of `value` (1.0 = no difference).
    pub fn excludes(&self, value: f64) -> bool {
        // Beyond rounding: an interval of no width (slices all alike) holds its own mean even
        // where the two were summed in another order.
        let slack = 1e-9 * value.abs();
        match (self.low, self.high) {
            (Some(low), Some(high)) => value < low - slack || value > high + slack,
            _ => false,
        }
    }

    fn of_logs(mean: UnitMean) -> Self {
        RatioInterval {
            n: mean.n,
            mean: mean.mean.exp(),
            low: mean.half_width().map(|h| (mean.mean - h).exp()),
            high: mean.half_width().map(|h| (mean.mean + h).exp()),
            units: mean.units,
            log_standard_error: mean.standard_error,
            df: mean.df,
        }
    }
}

fn positive_log(ratio: f64) -> Option<f64> {
    (ratio > 0.0 && ratio.is_finite()).then(|| ratio.ln())
}

/// A mean with the standard error that predicts the next run's: over the units that vary
/// from run to run where there are two or more, else over one unit's slices (`block_mean`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct UnitMean {
    /// Values that went in.
    pub n: usize,
    /// Units they came from (1: one instance, the interval is its slices').
    pub units: usize,
    pub mean: f64,
    /// None where there is no spread to take it from (one value, or one unit of one value).
    pub standard_error: Option<f64>,
    pub df: Option<f64>,
}

impl UnitMean {
    /// The 95% half-width: Student's t at `df` times the standard error.
    pub fn half_width(&self) -> Option<f64> {
        Some(t_quantile_95_at(self.df?) * self.standard_error?)
    }
}

/// One value of a run in its place: the unit it was measured in (a crew generation, which
/// has cgroups of its own), its round, the value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    pub unit: u32,
    pub round: u32,
    pub value: f64,
}

/// The values alone, in their order.
pub fn values(placed: &[Placed]) -> Vec<f64> {
    placed.iter().map(|p| p.value).collect()
}

/// The share of a unit's values left out at either end before its mean is taken (Tukey and
/// McLaughlin's trimmed mean, at the 20% Wilcox recommends). Slices are heavy-tailed where
/// other load runs: on the development VM a slice's log overhead had a kurtosis of 10-40
/// quiet and up to 330 under a bursty neighbour, its SD 2-7x its robust SD, since the
/// hypervisor's steal and interrupts reach no counter a slice can be left out by. The tails
/// come on both sides and alike in the control (the baseline's own cgroup, true overhead 0):
/// trimming them cut each instance mean's spread, and so the run's interval, 1.3-4x
/// (scripts/bench-noise), for about 6% of a plain mean's efficiency on normal noise.
pub const TRIM_SHARE: f64 = 0.2;

/// How many of `n` values `trimmed_mean` leaves out at each end.
fn trimmed_count(n: usize) -> usize {
    (TRIM_SHARE * n as f64).floor() as usize
}

/// The mean of `values` with the lowest and highest `TRIM_SHARE` of them left out (rounded
/// down: under five values, none); None for none.
pub fn trimmed_mean(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    trimmed_mean_of_sorted(&sorted)
}

fn trimmed_mean_of_sorted(sorted: &[f64]) -> Option<f64> {
    let k = trimmed_count(sorted.len());
    let kept = &sorted[k..sorted.len() - k];
    (!kept.is_empty()).then(|| kept.iter().sum::<f64>() / kept.len() as f64)
}

/// The mean over the units that vary between runs, measured inside the run: each unit (a
/// crew generation: its own workers, address layouts and memory cgroups) summed up by its
/// values' trimmed mean (`trimmed_mean`), then the units' figures averaged, with Student's t
/// at units less one (a random-effects mean: the units' spread holds the cgroup instance's
/// cost, which one instance's slices cannot see, and what the slices add). Where the values
/// come from one unit, its slices' interval stands in (`block_mean` of the values Winsorized
/// at the trimmed ends, over 1 - 2 x the trimmed share: the trimmed mean's standard error),
/// with `units` 1 saying so.
pub fn unit_mean(values: &[Placed]) -> Option<UnitMean> {
    let units = by_unit(values);
    if units.len() < 2 {
        return one_unit_mean(values);
    }
    let means: Vec<f64> = units.iter().map(|members| trimmed_mean(members)).collect::<Option<_>>()?;
    over_units(&means, values.len())
}

/// The values of each unit, units in the order first seen.
fn by_unit(values: &[Placed]) -> Vec<Vec<f64>> {
    let mut units: Vec<(u32, Vec<f64>)> = Vec::new();
    for v in values {
        match units.iter_mut().find(|(unit, _)| *unit == v.unit) {
            Some((_, members)) => members.push(v.value),
            None => units.push((v.unit, vec![v.value])),
        }
    }
    units.into_iter().map(|(_, members)| members).collect()
}

/// The mean of two or more units' figures, with Student's t at units less one.
fn over_units(means: &[f64], n: usize) -> Option<UnitMean> {
    let estimate = Estimate::of_values(means)?;
    Some(UnitMean {
        n,
        units: means.len(),
        mean: estimate.mean,
        standard_error: Some(estimate.standard_error),
        df: Some(estimate.df),
    })
}

/// One unit's trimmed mean with its slices' interval: the values Winsorized (each beyond the
/// trimmed ends set to the nearest one kept), their `block_mean`'s standard error over the
/// share kept (Tukey and McLaughlin), its degrees of freedom the blocks' kept share less one.
fn one_unit_mean(values: &[Placed]) -> Option<UnitMean> {
    let mut sorted = self::values(values);
    sorted.sort_by(f64::total_cmp);
    let k = trimmed_count(sorted.len());
    let (low, high) = (*sorted.get(k)?, sorted[sorted.len() - 1 - k]);
    let winsorized: Vec<(u32, f64)> = values.iter().map(|v| (v.round, v.value.clamp(low, high))).collect();
    let block = block_mean(&winsorized)?;
    let kept = 1.0 - 2.0 * k as f64 / sorted.len() as f64;
    Some(UnitMean {
        n: block.n,
        units: usize::from(!values.is_empty()),
        mean: trimmed_mean_of_sorted(&sorted)?,
        standard_error: block.standard_error.map(|se| se / kept),
        // Tukey and McLaughlin's values kept less one, of the blocks' effective count.
        df: block.df.map(|_| (block.effective_n * kept - 1.0).max(1.0)),
    })
}

/// A mean over slices taken in time order, with a 95% interval that holds where neighbouring
/// slices are correlated (measured on the development VM: lag-1 autocorrelation of the
/// baseline's cost 0.41 over 0.1 s slices). Rounds are paired into ABBA blocks (rounds 1-2,
/// 3-4, ...: a linear drift cancels within a block, where the forward round's pair and the
/// backward round's pair lean opposite ways); the variance of the blocks' mean is then
/// inflated by their own lag-1 autocorrelation rho (the effective count n (1 - rho) / (1 + rho),
/// rho clipped to 0..0.9), and Student's t is taken at that count less one. It describes one
/// unit (one crew, one set of cgroups); `unit_mean` is what holds from run to run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BlockMean {
    /// Values (slices or slice pairs) that went in.
    pub n: usize,
    /// Blocks they formed (the values themselves where too few for blocks).
    pub blocks: usize,
    pub mean: f64,
    /// The blocks' lag-1 autocorrelation, as used (clipped).
    pub rho: f64,
    pub effective_n: f64,
    /// None where fewer than two blocks (or values) remain.
    pub standard_error: Option<f64>,
    pub df: Option<f64>,
    pub half_width: Option<f64>,
}

/// Fewer blocks than this and the values are used one by one (each its own block): a
/// 2-slice run keeps an interval, from its two values.
const MIN_BLOCKS: usize = 4;
/// Fewer blocks than this and rho is not estimated (taken as 0): from a handful of values its
/// estimate is mostly noise.
const MIN_BLOCKS_FOR_RHO: usize = 8;

/// `values` as (round, value), in round order; a round may be missing (a slice not counted).
pub fn block_mean(values: &[(u32, f64)]) -> Option<BlockMean> {
    if values.is_empty() {
        return None;
    }
    let mut blocks: Vec<(u32, Vec<f64>)> = Vec::new();
    for &(round, value) in values {
        let block = (round.max(1) - 1) / 2;
        match blocks.last_mut() {
            Some((id, members)) if *id == block => members.push(value),
            _ => blocks.push((block, vec![value])),
        }
    }
    let means: Vec<f64> = match blocks.len() >= MIN_BLOCKS {
        true => blocks.iter().map(|(_, m)| m.iter().sum::<f64>() / m.len() as f64).collect(),
        false => values.iter().map(|&(_, v)| v).collect(),
    };
    let summary = summarize(&means)?;
    // The estimate weighs every value once (a block with one round left out counts once, not
    // twice); the blocks give its spread.
    let mean = values.iter().map(|&(_, v)| v).sum::<f64>() / values.len() as f64;
    let rho = match means.len() >= MIN_BLOCKS_FOR_RHO {
        true => lag1_autocorrelation(&means).clamp(0.0, 0.9),
        false => 0.0,
    };
    let effective_n = summary.n as f64 * (1.0 - rho) / (1.0 + rho);
    let spread = summary.n > 1;
    let standard_error = spread.then(|| summary.stddev / effective_n.sqrt());
    let df = spread.then(|| (effective_n - 1.0).max(1.0));
    let half_width = standard_error.zip(df).map(|(se, df)| t_quantile_95_at(df) * se);
    Some(BlockMean { n: values.len(), blocks: means.len(), mean, rho, effective_n, standard_error, df, half_width })
}

/// The lag-1 autocorrelation of a series (0 for a constant one).
pub fn lag1_autocorrelation(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 3 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let denominator: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    let numerator: f64 = values.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    if denominator > 0.0 { numerator / denominator } else { 0.0 }
}

/// faultscale's one overhead estimator: per-round ratios (cost per fault over the baseline's in
/// the same round) as logs, each unit's trimmed mean of them, the geometric mean over units,
/// with the interval of `unit_mean`. `ratios` in round order.
pub fn overhead_interval(ratios: &[Placed]) -> Option<RatioInterval> {
    let logs: Vec<Placed> =
        ratios.iter().map(|p| Some(Placed { value: positive_log(p.value)?, ..*p })).collect::<Option<_>>()?;
    unit_mean(&logs).map(RatioInterval::of_logs)
}

/// Whether trimming left out a cost on one side: the plain geometric mean of the ratios, with
/// its interval over the slices (all of them as one unit: what differs between instances moves
/// both figures alike, so only the slices can tell a one-sided tail, also one that a single
/// instance has), where that interval excludes `overhead_interval`'s trimmed figure: a minority
/// of slices at one end differ from the rest by more than noise. None where it does not.
pub fn trimmed_tail(ratios: &[Placed]) -> Option<TrimmedTail> {
    let trimmed = overhead_interval(ratios)?;
    let logs: Vec<(u32, f64)> =
        ratios.iter().map(|p| Some((p.round, positive_log(p.value)?))).collect::<Option<_>>()?;
    let block = block_mean(&logs)?;
    let plain = RatioInterval::of_logs(UnitMean {
        n: block.n,
        units: 1,
        mean: block.mean,
        standard_error: block.standard_error,
        df: block.df,
    });
    plain.excludes(trimmed.mean).then_some(TrimmedTail {
        trimmed: trimmed.mean,
        plain: plain.mean,
        low: plain.low?,
        high: plain.high?,
    })
}

/// A tail trimming left out (`trimmed_tail`): the figure given, and the plain mean over the
/// slices with its 95% interval, as ratios.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrimmedTail {
    pub trimmed: f64,
    pub plain: f64,
    pub low: f64,
    pub high: f64,
}

impl TrimmedTail {
    /// What it means, in the words the run, `compare` and `plot` all say it in.
    pub fn described(&self) -> String {
        format!(
            "the plain mean of its slices' overheads is {:.1}% (95% CI {:.1}-{:.1}% over the slices), which excludes the {:.1}% given (each cgroup instance's trimmed mean, a fifth of its rounds off each end): a minority of its slices cost far {} than the rest (reclaim or another cost in some slices only, or load that struck this placement's slices); the figure given leaves them out, the plain mean counts them",
            100.0 * self.plain,
            100.0 * self.low,
            100.0 * self.high,
            100.0 * self.trimmed,
            if self.plain > self.trimmed { "more" } else { "less" },
        )
    }
}

/// One run's estimate as `compare` tests it: a mean (of logs, for rates and ratios) with its
/// standard error and degrees of freedom, from the run's units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub standard_error: f64,
    pub df: f64,
}

impl Estimate {
    pub fn of(mean: &UnitMean) -> Option<Self> {
        Some(Estimate { mean: mean.mean, standard_error: mean.standard_error?, df: mean.df? })
    }

    /// The mean of independent values (units, runs, a sample) with its standard error, sd /
    /// sqrt(n), at n - 1 degrees of freedom; None under two values.
    pub fn of_values(values: &[f64]) -> Option<Self> {
        let summary = summarize(values).filter(|s| s.n > 1)?;
        Some(Estimate {
            mean: summary.mean,
            standard_error: summary.stddev / (summary.n as f64).sqrt(),
            df: (summary.n - 1) as f64,
        })
    }
}

/// b - a from two estimates, each with its own standard error (Welch's t): the
/// Welch-Satterthwaite degrees of freedom from theirs. None where neither has a spread.
pub fn estimate_difference(a: Estimate, b: Estimate) -> Option<RatioChange> {
    let (va, vb) = (a.standard_error.powi(2), b.standard_error.powi(2));
    let se = (va + vb).sqrt();
    if !(se > 0.0 && se.is_finite()) {
        return None;
    }
    let df = (va + vb).powi(2) / (va.powi(2) / a.df + vb.powi(2) / b.df);
    let change = b.mean - a.mean;
    let half_width = t_quantile_95_at(df) * se;
    Some(RatioChange { change, low: change - half_width, high: change + half_width, p: t_two_sided_p(change / se, df) })
}

/// Holm's step-down adjustment of p-values for testing several rows at once: the family-wise
/// error stays at the level asked, where raw p-values would call one row in twenty
/// significant by chance.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let count = p_values.len();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; count];
    let mut running_max: f64 = 0.0;
    for (rank, &index) in order.iter().enumerate() {
        running_max = running_max.max(((count - rank) as f64 * p_values[index]).min(1.0));
        adjusted[index] = running_max;
    }
    adjusted
}

/// A change between two samples with its 95% interval and two-sided p-value (Welch's t):
/// for ratios (`estimate_difference` of logs, the caller taking exp) the change is new/base, for
/// plain values (`difference`) new - base.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RatioChange {
    pub change: f64,
    pub low: f64,
    pub high: f64,
    pub p: f64,
}

/// mean(b) - mean(a) with its 95% interval and p-value (Welch's t, `estimate_difference`,
/// over each sample's `Estimate::of_values`); None when a side has fewer than two values.
/// Neither with a spread: the change exactly, p 1 for none and 0 for any.
pub fn difference(a: &[f64], b: &[f64]) -> Option<RatioChange> {
    let (a, b) = (Estimate::of_values(a)?, Estimate::of_values(b)?);
    if a.standard_error == 0.0 && b.standard_error == 0.0 {
        let change = b.mean - a.mean;
        let p = if change == 0.0 { 1.0 } else { 0.0 };
        return Some(RatioChange { change, low: change, high: change, p });
    }
    estimate_difference(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// A deterministic pseudo-random stream in [-0.5, 0.5) (xorshift), so the tests need no crate.
    fn noise(seed: u64, count: usize) -> Vec<f64> {
        // The seed scrambled (splitmix64's finalizer) first: xorshift's first outputs from
        // nearby seeds are alike, which correlated one run's instances with the next's.
        let mut state = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        state = (state ^ (state >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        state = (state ^ (state >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        state = (state ^ (state >> 31)).max(1);
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    fn in_rounds(values: &[f64]) -> Vec<(u32, f64)> {
        values.iter().enumerate().map(|(i, &v)| (i as u32 + 1, v)).collect()
    }

    /// Values of one unit, in rounds.
    fn in_one_unit(values: &[(u32, f64)]) -> Vec<Placed> {
        values.iter().map(|&(round, value)| Placed { unit: 0, round, value }).collect()
    }

    /// A synthetic run: `units` instances of `rounds` rounds each, every instance's cost off the
    /// truth (ratio 1) by its own offset (spread `between`), each round by wandering noise.
    fn synthetic_run(seed: u64, units: u32, rounds: u32, between: f64, within: f64) -> Vec<Placed> {
        let offsets = noise(seed * 7 + 3, units as usize);
        let mut values = Vec::new();
        for unit in 0..units {
            let mut level = 0.0;
            for (i, e) in noise(seed * 131 + unit as u64 * 17 + 1, rounds as usize).into_iter().enumerate() {
                level = 0.5 * level + within * e;
                let round = unit * rounds + i as u32 + 1;
                // Uniform on [-0.5, 0.5): sqrt(12) makes its standard deviation 1.
                let value = (12f64.sqrt() * between * offsets[unit as usize] + level).exp();
                values.push(Placed { unit, round, value });
            }
        }
        values
    }

    #[test]
    fn an_interval_over_cgroup_instances_covers_the_truth_of_the_next_run() {
        // Each run's instances cost 0.2% apart (between-instance SD), its slices 1% apart: the
        // slices' own interval (one instance's view) misses the truth far more often than it
        // says; the units' interval about as often as it says.
        let (mut over_units, mut over_slices, mut half_widths) = (0, 0, Vec::new());
        for run in 0..400u64 {
            let values = synthetic_run(run, 8, 50, 0.002, 0.01);
            let interval = overhead_interval(&values).unwrap();
            assert_eq!((interval.units, interval.df), (8, Some(7.0)));
            half_widths.push(interval.high.unwrap().ln() - interval.mean.ln());
            over_units += usize::from(interval.excludes(1.0));
            let as_one: Vec<Placed> = values.iter().map(|p| Placed { unit: 0, ..*p }).collect();
            over_slices += usize::from(overhead_interval(&as_one).unwrap().excludes(1.0));
        }
        eprintln!(
            "of 400 runs, the interval over 8 instances excluded the truth in {over_units}, one instance's in {over_slices}"
        );
        assert!((8..=36).contains(&over_units), "{over_units} of 400 excluded the truth (95%: about 20)");
        assert!(over_slices > 60, "one instance's interval excluded the truth {over_slices} of 400 times");
        let median = {
            half_widths.sort_by(f64::total_cmp);
            half_widths[200]
        };
        assert!(median < 0.004, "median half-width {median}");
    }

    #[test]
    fn a_trimmed_mean_leaves_out_a_fifth_at_each_end() {
        // Ten values: two off each end, whatever their size. scipy 1.17
        // stats.trim_mean([-1e9, 1, ..., 8, 1e9], 0.2) = 4.5, trim_mean([1, 2, 9], 0.2) = 4.0
        // (R's mean(x, trim = 0.2) alike: floor(n * 0.2) off each end).
        let values = [-1e9, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1e9];
        assert!(close(trimmed_mean(&values).unwrap(), 4.5, 1e-12));
        // Under five values none is left out.
        assert!(close(trimmed_mean(&[1.0, 2.0, 9.0]).unwrap(), 4.0, 1e-12));
        assert_eq!(trimmed_mean(&[]), None);
    }

    /// `synthetic_run` with one slice in `every` hit by a shock of `size` (log), up or down at
    /// random: the heavy tails a shared machine's steal and interrupts give.
    fn contaminated_run(seed: u64, every: usize, size: f64) -> Vec<Placed> {
        let mut values = synthetic_run(seed, 8, 50, 0.002, 0.01);
        let hits = noise(seed * 977 + 5, values.len());
        for (i, (value, hit)) in values.iter_mut().zip(hits).enumerate() {
            if i % every == seed as usize % every {
                value.value *= (size * hit.signum()).exp();
            }
        }
        values
    }

    #[test]
    fn trimming_keeps_the_coverage_and_narrows_the_interval_under_heavy_tails() {
        // One slice in ten shocked by 10% (ten times a slice's noise): the interval over the
        // instances' trimmed means still covers the truth about 95% of the time, and is far
        // narrower than one over their plain means would be.
        let (mut excluded, mut trimmed, mut plain) = (0, Vec::new(), Vec::new());
        for run in 0..400u64 {
            let values = contaminated_run(run, 10, 0.1);
            let interval = overhead_interval(&values).unwrap();
            excluded += usize::from(interval.excludes(1.0));
            trimmed.push(interval.log_standard_error.unwrap());
            let means: Vec<f64> = (0..8)
                .map(|unit| {
                    let logs: Vec<f64> = values.iter().filter(|p| p.unit == unit).map(|p| p.value.ln()).collect();
                    logs.iter().sum::<f64>() / logs.len() as f64
                })
                .collect();
            plain.push(summarize(&means).unwrap().stddev / 8f64.sqrt());
        }
        assert!((8..=36).contains(&excluded), "{excluded} of 400 excluded the truth (95%: about 20)");
        let median = |xs: &mut Vec<f64>| {
            xs.sort_by(f64::total_cmp);
            xs[200]
        };
        let (trimmed, plain) = (median(&mut trimmed), median(&mut plain));
        assert!(trimmed < 0.6 * plain, "standard error trimmed {trimmed}, plain {plain}");
    }

    #[test]
    fn a_tail_one_instance_alone_has_is_found_over_the_slices() {
        // Two instances of 40 rounds at 0.3% noise; in the first, 6 rounds cost 1.5x. Over two
        // instances' means (t at 1 df) no plain interval could exclude the trimmed figure; over
        // the slices it does. Tails on both sides in both instances: nothing found.
        let run = |tail: fn(u32, u32) -> f64| -> Vec<Placed> {
            (0..80u32)
                .zip(noise(23, 80))
                .map(|(i, e)| Placed { unit: i / 40, round: i + 1, value: (0.003 * e + tail(i / 40, i % 40)).exp() })
                .collect()
        };
        let found = trimmed_tail(&run(|unit, i| if unit == 0 && i % 7 == 2 { 1.5f64.ln() } else { 0.0 })).unwrap();
        assert!(found.trimmed < 1.005 && found.plain > 1.02 && found.low > found.trimmed, "{found:?}");
        assert!(found.described().contains("cost far more than the rest"), "{}", found.described());
        let both = run(|_, i| match i % 10 {
            2 => 1.5f64.ln(),
            7 => -(1.5f64.ln()),
            _ => 0.0,
        });
        assert_eq!(trimmed_tail(&both), None);
    }

    #[test]
    fn one_unit_gives_its_trimmed_mean_with_the_winsorized_slices_error() {
        // Forty rounds of one instance, two wild: the estimate ignores them, the error is the
        // Winsorized values' block error over the 60% kept.
        let mut values: Vec<(u32, f64)> =
            noise(11, 40).into_iter().enumerate().map(|(i, e)| (i as u32 + 1, 0.01 * e)).collect();
        values[7].1 = 5.0;
        values[30].1 = -5.0;
        let placed = in_one_unit(&values);
        let one = unit_mean(&placed).unwrap();
        let plain: Vec<f64> = values.iter().map(|v| v.1).collect();
        assert_eq!((one.n, one.units), (40, 1));
        assert!(close(one.mean, trimmed_mean(&plain).unwrap(), 1e-12));
        assert!(one.mean.abs() < 0.01, "{one:?}");
        let mut sorted = plain.clone();
        sorted.sort_by(f64::total_cmp);
        let winsorized: Vec<(u32, f64)> = values.iter().map(|&(r, v)| (r, v.clamp(sorted[8], sorted[31]))).collect();
        let block = block_mean(&winsorized).unwrap();
        assert!(close(one.standard_error.unwrap(), block.standard_error.unwrap() / 0.6, 1e-12), "{one:?}");
        assert!(one.standard_error.unwrap() < 0.01, "the wild rounds left out of the error too: {one:?}");
    }

    #[test]
    fn the_units_mean_weighs_each_unit_once_and_one_unit_falls_back_to_its_slices() {
        let values = [(0, 1.0), (0, 1.0), (0, 1.0), (1, 4.0), (2, 1.0), (2, 1.0)];
        let placed: Vec<Placed> =
            values.iter().enumerate().map(|(i, &(unit, value))| Placed { unit, round: i as u32 + 1, value }).collect();
        let mean = unit_mean(&placed).unwrap();
        assert_eq!((mean.n, mean.units), (6, 3));
        assert!(close(mean.mean, 2.0, 1e-12), "{mean:?}");
        // Unit means 1, 4, 1: sd sqrt(3), se 1, df 2 (scipy 1.17 stats.sem([1, 4, 1]) = 1.0).
        assert!(close(mean.standard_error.unwrap(), 1.0, 1e-12) && mean.df == Some(2.0), "{mean:?}");
        let estimate = Estimate::of_values(&[1.0, 4.0, 1.0]).unwrap();
        assert!(close(estimate.mean, 2.0, 1e-12) && close(estimate.standard_error, 1.0, 1e-12) && estimate.df == 2.0);
        assert_eq!(Estimate::of_values(&[3.0]), None);
        let one = unit_mean(&in_one_unit(&[(1, 1.0), (2, 2.0), (3, 3.0)])).unwrap();
        let block = block_mean(&[(1, 1.0), (2, 2.0), (3, 3.0)]).unwrap();
        assert_eq!((one.units, one.standard_error, one.df), (1, block.standard_error, block.df));
    }

    #[test]
    fn two_runs_estimates_differ_by_welch_satterthwaite() {
        // se 0.3 (df 4) and 0.4 (df 9): se 0.5, df 0.0625 / (0.0081 / 4 + 0.0256 / 9) = 12.84.
        let a = Estimate { mean: 1.0, standard_error: 0.3, df: 4.0 };
        let b = Estimate { mean: 2.0, standard_error: 0.4, df: 9.0 };
        // scipy 1.17: df = 12.835140, 2 * stats.t.sf(2.0, df) = 0.06711982,
        // 0.5 * stats.t.ppf(0.975, df) = 1.081596.
        let change = estimate_difference(a, b).unwrap();
        assert!(close(change.change, 1.0, 1e-12));
        assert!(close(change.high - change.change, 1.081_596, 1e-6), "{change:?}");
        assert!(close(change.change - change.low, 1.081_596, 1e-6), "{change:?}");
        assert!(close(change.p, 0.067_119_82, 1e-8), "{change:?}");
        assert_eq!(
            estimate_difference(Estimate { standard_error: 0.0, ..a }, Estimate { standard_error: 0.0, ..b }),
            None
        );
    }

    #[test]
    fn blocks_pair_the_abba_rounds_and_cancel_a_linear_drift() {
        // Forward rounds lean up by the drift, backward ones down: each block's mean is exact.
        let values: Vec<f64> = (0..40).map(|i| 1.0 + if i % 2 == 0 { 0.01 } else { -0.01 }).collect();
        let block = block_mean(&in_rounds(&values)).unwrap();
        assert_eq!((block.n, block.blocks), (40, 20));
        assert!(close(block.mean, 1.0, 1e-12));
        assert!(block.half_width.unwrap() < 1e-12, "{block:?}");
        // Per value, the alternation alone would make a spread of +-0.01.
        let plain = summarize(&values).unwrap();
        assert!(plain.stddev > 0.009);
    }

    #[test]
    fn correlated_slices_widen_the_interval_and_independent_ones_do_not() {
        let independent = noise(7, 400);
        let plain = block_mean(&in_rounds(&independent)).unwrap();
        assert!(plain.rho < 0.2, "{plain:?}");
        // A slowly wandering series (an AR(1) with 0.9): neighbours alike.
        let mut wander = Vec::new();
        let mut level = 0.0;
        for e in noise(11, 400) {
            level = 0.9 * level + e;
            wander.push(level);
        }
        let correlated = block_mean(&in_rounds(&wander)).unwrap();
        assert!(correlated.rho > 0.5, "{correlated:?}");
        assert!(correlated.effective_n < correlated.blocks as f64 / 2.0);
        let naive = t_quantile_95(correlated.blocks - 1) * summarize(&wander).unwrap().stddev / 200f64.sqrt();
        assert!(correlated.half_width.unwrap() > 1.5 * naive, "{correlated:?} vs naive {naive}");
    }

    #[test]
    fn an_interval_over_correlated_noise_covers_the_truth_about_as_often_as_it_says() {
        // 400 runs of 50 rounds whose noise wanders (AR(1), 0.5) around a true ratio of 1: the
        // interval must exclude 1 in about 5% of them, not the 15% an independent t gives.
        let mut excluded = 0;
        for run in 0..400u64 {
            let mut level = 0.0;
            let ratios: Vec<(u32, f64)> = noise(run * 31 + 5, 50)
                .into_iter()
                .enumerate()
                .map(|(i, e)| {
                    level = 0.5 * level + 0.02 * e;
                    (i as u32 + 1, level.exp())
                })
                .collect();
            if overhead_interval(&in_one_unit(&ratios)).unwrap().excludes(1.0) {
                excluded += 1;
            }
        }
        assert!(excluded <= 40, "{excluded} of 400 excluded the truth");
    }

    #[test]
    fn few_values_keep_an_interval_and_missing_rounds_are_skipped() {
        let two = overhead_interval(&in_one_unit(&[(1, 1.10), (2, 1.12)])).unwrap();
        assert!(two.low.is_some() && two.high.is_some());
        assert_eq!(overhead_interval(&in_one_unit(&[(1, 1.1)])).unwrap().low, None);
        let gappy = block_mean(&[(1, 1.0), (2, 3.0), (5, 2.0), (9, 2.0), (10, 2.0), (13, 2.0)]).unwrap();
        // Rounds 1-2, 5, 9-10, 13: four blocks; the mean weighs each of the six values once.
        assert_eq!(gappy.blocks, 4);
        assert!(close(gappy.mean, 12.0 / 6.0, 1e-12));
        let uneven = block_mean(&[(1, 1.0), (2, 1.0), (3, 4.0), (5, 1.0), (6, 1.0), (7, 1.0), (8, 1.0)]).unwrap();
        assert!(close(uneven.mean, 10.0 / 7.0, 1e-12), "a lone round counts once: {uneven:?}");
        assert_eq!(overhead_interval(&in_one_unit(&[(1, 0.0), (2, 1.0)])), None);
    }

    #[test]
    fn time_per_unit_and_scaling_have_no_value_for_a_zero_rate() {
        assert_eq!(ns_per_unit(90_000.0, 2), Some(1e9 * 2.0 / 90_000.0));
        assert_eq!(ns_per_unit(0.0, 2), None);
        assert_eq!(ns_per_unit(f64::NAN, 2), None);
        let sweep = [(4, 300.0), (1, 100.0)];
        assert_eq!(vs_linear(&sweep, 4), Some(0.75));
        assert_eq!(vs_linear(&sweep, 1), Some(1.0));
        assert_eq!(vs_linear(&sweep, 2), None, "a count not measured");
        assert_eq!(vs_linear(&sweep[..1], 4), None, "no sweep");
        assert_eq!(vs_linear(&[(1, 0.0), (4, 300.0)], 4), None, "zero base rate");
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sum of squares 32, sample variance 32/7. numpy 2 /
        // scipy 1.17: mean 5.0, median 4.5, std(ddof=1) 2.1380899, stats.sem 0.7559289.
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12) && close(s.stddev, 2.138_089_9, 1e-7));
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
        let r = overhead_interval(&in_one_unit(&[(1, 1.1)])).unwrap();
        assert_eq!((r.low, r.high), (None, None));
        assert!(!r.excludes(1.0));
    }

    #[test]
    fn t_quantiles_are_students_and_converge_to_z() {
        // scipy 1.17 stats.t.ppf(0.975, df), R's qt(0.975, df) (mpmath at 40 digits agrees):
        // qt(0.975, 1) = 12.706205, qt(0.975, 2) = 4.302653, qt(0.975, 4) = 2.776445,
        // qt(0.975, 30) = 2.042272, qt(0.975, 40) = 2.021075, qt(0.975, 120) = 1.979930,
        // qt(0.975, 1e4) = 1.960201; stats.norm.ppf(0.975), qnorm(0.975) = 1.959964.
        for (df, t) in [
            (1, 12.706_205),
            (2, 4.302_653),
            (4, 2.776_445),
            (30, 2.042_272),
            (40, 2.021_075),
            (120, 1.979_930),
            (10_000, 1.960_201),
        ] {
            assert!(close(t_quantile_95(df), t, 1e-6), "df {df}: {}", t_quantile_95(df));
        }
        // Beyond MAX_DF as at it (qt(0.975, 1e4) = 1.960201, a hair over qt(0.975, 1e5) =
        // 1.959988), continuous up to it; 1e9 returns (statrs's own inverse would not).
        assert_eq!(t_quantile_95(100_000), t_quantile_95(10_000));
        assert_eq!(t_quantile_95_at(1e9), t_quantile_95(10_000));
        assert!(close(t_quantile_95_at(MAX_DF - 1e-6), t_quantile_95_at(MAX_DF), 1e-9));
        assert_eq!(t_quantile_95(0), f64::INFINITY);
        assert!(close(t_quantile_95_at(f64::INFINITY), 1.959_964, 1e-6));
        // Fractional df, where it matters most, at 2-3 slices a side and Welch's 6.25 / 1.0625
        // (scipy as above: qt(0.975, 1.25) = 8.027951, qt(0.975, 1.5) = 6.016663,
        // qt(0.975, 2.5) = 3.574655, qt(0.975, 5.882353) = 2.458824).
        for (df, t) in [(1.25, 8.027_951), (1.5, 6.016_663), (2.5, 3.574_655), (6.25 / 1.0625, 2.458_824)] {
            assert!(close(t_quantile_95_at(df), t, 1e-6), "df {df}: {}", t_quantile_95_at(df));
        }
        // Continuous in df, and the whole df's value at a whole df.
        assert!(close(t_quantile_95_at(4.0 - 1e-9), t_quantile_95(4), 1e-6));
        assert!(t_quantile_95_at(4.5) < t_quantile_95(4) && t_quantile_95_at(4.5) > t_quantile_95(5));
        // Below 1 df, as at 1.
        assert_eq!(t_quantile_95_at(0.3), t_quantile_95(1));
    }

    #[test]
    fn welch_differences_match_hand_computation() {
        // a: mean 3, variance 2.5; b: mean 6, variance 10; n = 5 each.
        // se = sqrt(0.5 + 2) = 1.5811; t = 3 / se = 1.8974;
        // df = 2.5^2 / (0.5^2/4 + 2^2/4) = 6.25 / 1.0625 = 5.882 -> t(5.882) = 2.459: not significant.
        // scipy 1.17 stats.ttest_ind(b, a, equal_var=False) (R's t.test(b, a)): t = 1.897367,
        // df = 5.882353, p = 0.1075312, 95% CI -0.8877416 to 6.8877416.
        let d = difference(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(close(d.change, 3.0, 1e-12));
        assert!(close(d.low, -0.887_741_6, 1e-6) && close(d.high, 6.887_741_6, 1e-6), "{d:?}");
        assert!(close(d.p, 0.107_531_2, 1e-7), "{d:?}");
        // Tight samples far apart are significant, in either direction. scipy as above,
        // ttest_ind([90, 91, 89], [100, 101, 99], equal_var=False): t = -12.247449, df = 4,
        // p = 0.0002552167, 95% CI -12.266958 to -7.733042.
        let slower = difference(&[100.0, 101.0, 99.0], &[90.0, 91.0, 89.0]).unwrap();
        assert!(slower.p < 0.05 && slower.change < 0.0);
        assert!(close(slower.p, 0.000_255_216_7, 1e-10), "{slower:?}");
        assert!(close(slower.low, -12.266_958, 1e-6) && close(slower.high, -7.733_042, 1e-6), "{slower:?}");
        assert_eq!(difference(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(difference(&[5.0, 5.0], &[6.0, 6.0]).unwrap().p, 0.0);
        assert_eq!(difference(&[5.0, 5.0], &[5.0, 5.0]).unwrap().p, 1.0);
    }

    #[test]
    fn the_overhead_interval_works_on_log_ratios() {
        // Ratios 1.08, 1.10, 1.12, one unit each: the geometric mean and the t interval of the
        // logs (t(0.975, 2) = 4.302653). scipy 1.17: exp of stats.t.interval(0.95, 2,
        // loc=mean(logs), scale=stats.sem(logs)) = 1.0513008 to 1.1507014, exp(mean) = 1.0998788.
        let units = |ratios: &[f64]| -> Vec<Placed> {
            ratios.iter().enumerate().map(|(i, &value)| Placed { unit: i as u32, round: i as u32 + 1, value }).collect()
        };
        let logs = [1.08f64.ln(), 1.10f64.ln(), 1.12f64.ln()];
        let mean = logs.iter().sum::<f64>() / 3.0;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let half = 4.302_653 * sd / 3f64.sqrt();
        let r = overhead_interval(&units(&[1.08, 1.10, 1.12])).unwrap();
        assert!(close(r.mean, mean.exp(), 1e-12));
        assert!(close(r.low.unwrap(), (mean - half).exp(), 1e-7));
        assert!(close(r.high.unwrap(), (mean + half).exp(), 1e-7));
        assert!(close(r.low.unwrap(), 1.051_300_8, 1e-7) && close(r.high.unwrap(), 1.150_701_4, 1e-7), "{r:?}");
        assert!(close(r.mean, 1.099_878_8, 1e-7));
        assert!(r.excludes(1.0));
        // Inverting every ratio inverts the estimate: one number whichever way it is read.
        let inverse = overhead_interval(&units(&[1.0 / 1.08, 1.0 / 1.10, 1.0 / 1.12])).unwrap();
        assert!(close(inverse.mean, 1.0 / r.mean, 1e-12));
        assert!(!overhead_interval(&units(&[0.9, 1.1])).unwrap().excludes(1.0));
        assert_eq!(overhead_interval(&units(&[1.0, 0.0])), None);
    }

    #[test]
    fn t_p_values_match_independent_values() {
        // scipy 1.17 2 * stats.t.sf(|t|, df), R's 2 * pt(-|t|, df); 2 * stats.norm.sf(|t|),
        // R's 2 * pnorm(-|t|) (mpmath's regularized betainc at 40 digits agrees):
        // 2*pt(-2.228, 10) = 0.05001177, 2*pt(-12.706, 1) = 0.05000080,
        // 2*pnorm(-1.96) = 0.04999579, 2*pt(-2, 12.84) = 0.06711148,
        // 2*pt(-10, 3) = 0.002128399, 2*pt(-40, 5) = 1.841196e-7.
        assert!(close(t_two_sided_p(2.228, 10.0), 0.050_011_77, 1e-8));
        assert!(close(t_two_sided_p(-12.706, 1.0), 0.050_000_80, 1e-8));
        assert!(close(t_two_sided_p(1.96, f64::INFINITY), 0.049_995_79, 1e-8));
        assert!(close(t_two_sided_p(2.0, 12.84), 0.067_111_48, 1e-8));
        assert!(close(t_two_sided_p(10.0, 3.0), 0.002_128_399, 1e-9));
        // A far tail keeps its digits (relative).
        assert!(close(t_two_sided_p(40.0, 5.0) / 1.841_196e-7, 1.0, 1e-6), "{}", t_two_sided_p(40.0, 5.0));
        // t(1) is Cauchy: p(|T| > 1) = 0.5 exactly.
        assert!(close(t_two_sided_p(1.0, 1.0), 0.5, 1e-12));
        assert!(close(t_two_sided_p(0.0, 7.0), 1.0, 1e-12));
        assert_eq!(t_two_sided_p(f64::INFINITY, 7.0), 0.0);
        // The p and the quantile agree: p = 0.05 at the 95% quantile, fractional df too.
        for df in [1.0, 1.5, 4.0, 6.25 / 1.0625, 30.0, 1e4, 1e5, 1e9] {
            assert!(close(t_two_sided_p(t_quantile_95_at(df), df), 0.05, 1e-9), "df {df}");
        }
    }

    #[test]
    fn holm_adjusts_step_down_and_stays_monotone() {
        // statsmodels 0.15 multipletests([0.01, 0.04, 0.03], method="holm")[1] = 0.03 0.06 0.06
        // and ([0.9, 0.8]) = 1 1 (R's p.adjust(p, "holm")).
        let adjusted = holm(&[0.01, 0.04, 0.03]);
        assert!(close(adjusted[0], 0.03, 1e-12));
        assert!(close(adjusted[1], 0.06, 1e-12));
        assert!(close(adjusted[2], 0.06, 1e-12));
        // 2 x 0.8 caps at 1, and the larger p may not fall below it.
        assert_eq!(holm(&[0.9, 0.8]), [1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }
}
