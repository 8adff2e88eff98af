//! Small pure helpers every layer shares: numbers with thousands separators, seconds, byte
//! sizes, kernel-style CPU lists, UTC dates, signal names, and one-line kernel files.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow, bail};

/// `1 slice`, `3 slices`: a count and its noun, plural with an s where the count is not 1.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

/// 1234567.8 -> "1,234,568"
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 && digits != "0" { format!("-{out}") } else { out }
}

/// A duration as a header shows it: "5 s", "0.5 s".
pub fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s} s") }
}

/// Parses seconds, fractions allowed (`0.5`, `60`), into a positive duration.
pub fn parse_seconds(option: &str, text: &str, allow_zero: bool) -> Result<Duration> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("{option} {text:?}: not a number of seconds; use e.g. {option} 5 or 0.5"))?;
    // A week bounds every sane run and keeps Duration::from_secs_f64 from overflowing.
    if !seconds.is_finite() || seconds > 7.0 * 86400.0 {
        bail!("{option} {text:?}: must be a finite number of seconds up to a week");
    }
    if seconds < 0.0 || (!allow_zero && seconds == 0.0) {
        let bound = if allow_zero { ">= 0" } else { "> 0" };
        bail!("{option} {text:?}: must be {bound} seconds");
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a byte size: `4096`, `64K`, `1M`, `2G` (binary units, as the kernel's memcg files use).
pub fn parse_size(option: &str, text: &str) -> Result<u64> {
    size_bytes(text).map_err(|why| anyhow!("{option} {text:?}: {why}; use bytes or K/M/G, e.g. {option} 1M"))
}

/// A byte size, or what is wrong with it (`not a size`, `too large ...`), for a message that
/// names the input and says the fix once.
pub fn size_bytes(text: &str) -> std::result::Result<u64, String> {
    let trimmed = text.trim();
    let (digits, multiplier) = match trimmed.chars().last() {
        Some('k' | 'K') => (&trimmed[..trimmed.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&trimmed[..trimmed.len() - 1], 1 << 20),
        Some('g' | 'G') => (&trimmed[..trimmed.len() - 1], 1 << 30),
        Some('t' | 'T') => (&trimmed[..trimmed.len() - 1], 1 << 40),
        _ => (trimmed, 1),
    };
    let too_large = || "too large (at most 16 EiB less one byte)".to_string();
    let value: u64 = digits.parse().map_err(|_| {
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) { too_large() } else { "not a size".into() }
    })?;
    value.checked_mul(multiplier).ok_or_else(too_large)
}

/// A signed figure with `decimals` places, never `-0.00`: a change that rounds to zero is
/// `+0.00` whichever side of zero it fell (a run compared with itself).
pub fn signed(value: f64, decimals: usize) -> String {
    let rounded = format!("{value:+.decimals$}");
    match rounded.strip_prefix('-') {
        Some(digits) if digits.chars().all(|c| c == '0' || c == '.') => format!("+{digits}"),
        _ => rounded,
    }
}

/// A size in binary units, as `free -h` gives one: `256 MiB`, `1.5 GiB`, `4 KiB`.
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = count as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{count} bytes"),
        _ if value.fract() == 0.0 || value >= 100.0 => format!("{value:.0} {}", UNITS[unit]),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

/// Parses a kernel-style CPU list (`0-3,6`, as in /sys/devices/system/cpu/online) into sorted,
/// distinct CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = cpu_list_entries(text)?;
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A CPU list's CPUs as written, in order, a CPU listed twice twice: `--cpus 0,0` is a
/// mistake to name, not one worker.
pub fn cpu_list_entries(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            bail!("CPU list {text:?} has an empty entry; write it as e.g. 0-3,6");
        }
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (parse_cpu_number(a, text)?, parse_cpu_number(b, text)?),
            None => {
                let cpu = parse_cpu_number(part, text)?;
                (cpu, cpu)
            }
        };
        if first > last {
            bail!("CPU list {text:?}: range {part} runs backwards; write it low-high");
        }
        cpus.extend(first..=last);
    }
    Ok(cpus)
}

fn parse_cpu_number(text: &str, whole: &str) -> Result<usize> {
    let cpu: usize = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("CPU list {whole:?}: {text:?} is not a CPU number; write it as e.g. 0-3,6"))?;
    // CPU_SETSIZE is the most sched_setaffinity can name.
    if cpu >= libc::CPU_SETSIZE as usize {
        bail!("CPU list {whole:?}: CPU {cpu} is beyond the largest possible CPU number");
    }
    Ok(cpu)
}

/// Formats CPUs back into the compact kernel form, for headers and logs.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

pub fn iso8601_utc(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", of_day / 3600, of_day % 3600 / 60, of_day % 60)
}

/// A signal as messages name it: `SIGINT`, or `signal 64` for one nix has no name for.
pub fn signal_name(signal: i32) -> String {
    use nix::sys::signal::Signal;
    Signal::try_from(signal).map(|s| s.as_str().to_string()).unwrap_or_else(|_| format!("signal {signal}"))
}

/// A one-line kernel file (sysfs, procfs) trimmed, or `missing` when it cannot be read.
pub fn read_line_or(path: impl AsRef<std::path::Path>, missing: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| missing.into())
}

/// The bracketed choice of a sysfs selector such as `always [madvise] never`.
pub fn selected_option(text: &str) -> String {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text.trim())
        .to_string()
}

/// Text from a file or a name as the terminal may be shown it: control characters (ESC, CR,
/// OSC's BEL, C1's CSI) and bidirectional overrides escaped as `{:?}` escapes them (`\u{1b}`,
/// `\r`), the rest as it is. A cell of a result file or a profile's description must not move
/// the cursor, retitle the terminal or hide the text beside it.
pub fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    let hostile = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(hostile) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hostile(c) { out.extend(c.escape_debug()) } else { out.push(c) }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_that_rounds_to_zero_has_no_minus_sign() {
        assert_eq!(signed(-0.0, 2), "+0.00");
        assert_eq!(signed(-0.004, 2), "+0.00");
        assert_eq!(signed(-0.005001, 2), "-0.01");
        assert_eq!(signed(1.25, 1), "+1.2");
        assert_eq!(signed(-3.0, 1), "-3.0");
    }

    #[test]
    fn sizes_are_said_in_binary_units() {
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(256 << 20), "256 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(224 << 30), "224 GiB");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(escaped("child-µ \"x\""), std::borrow::Cow::Borrowed("child-µ \"x\"")));
        assert_eq!(
            escaped("a\x1b[2Jb\rc\x1b]0;t\x07\u{9b}\u{202e}"),
            "a\\u{1b}[2Jb\\rc\\u{1b}]0;t\\u{7}\\u{9b}\\u{202e}"
        );
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(606_968.4), "606,968");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(thousands(36_418_112.0), "36,418,112");
    }

    #[test]
    fn cpu_lists_parse_like_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list("3,1,1-2").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_cpu_list(" 0 - 1 ").unwrap(), vec![0, 1]);
    }

    #[test]
    fn bad_cpu_lists_are_rejected_with_the_input_named() {
        for bad in ["", "a", "1,,2", "3-1", "-1", "0-", "99999", "18446744073709551616"] {
            let err = parse_cpu_list(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
    }

    #[test]
    fn cpu_lists_format_compactly() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[0, 2, 4, 5]), "0,2,4-5");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn seconds_accept_fractions_and_reject_nonsense() {
        assert_eq!(parse_seconds("--duration", "0.5", false).unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds("--duration", "60", false).unwrap(), Duration::from_secs(60));
        assert_eq!(parse_seconds("--warmup", "0", true).unwrap(), Duration::ZERO);
        for bad in ["0", "-1", "abc", "", "inf", "NaN", "1e300"] {
            let err = parse_seconds("--duration", bad, false).unwrap_err().to_string();
            assert!(err.starts_with("--duration"), "{err}");
        }
        assert_eq!(seconds(Duration::from_secs(5)), "5 s");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(parse_size("--chunk", "4096").unwrap(), 4096);
        assert_eq!(parse_size("--chunk", "64K").unwrap(), 65536);
        assert_eq!(parse_size("--chunk", "1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("--chunk", "2g").unwrap(), 2 << 30);
        for bad in ["", "M", "1.5M", "-1", "99999999999T"] {
            assert!(parse_size("--chunk", bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn dates_convert_like_date_1() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(iso8601_utc(UNIX_EPOCH + Duration::from_secs(1_796_030_672)), "2026-11-30T09:24:32Z");
        assert_eq!(iso8601_utc(UNIX_EPOCH + Duration::from_secs(951_782_399)), "2000-02-28T23:59:59Z");
    }

    #[test]
    fn bracketed_selection() {
        assert_eq!(selected_option("always [madvise] never"), "madvise");
        assert_eq!(selected_option("plain"), "plain");
    }
}
