//! Latency summaries and what `/proc` says about a process (CPU time, resident memory).

use anyhow::Context;
use std::time::Duration;

/// Nearest-rank percentiles of a set of durations.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub n: usize,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Summary {
    pub fn of(mut samples: Vec<Duration>) -> Summary {
        samples.sort_unstable();
        let n = samples.len();
        if n == 0 {
            return Summary::default();
        }
        let rank = |p: f64| samples[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Summary { n, p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: samples[n - 1] }
    }
}

/// Milliseconds with microsecond precision.
pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// `a / b` as "12.3×".
pub fn ratio(a: f64, b: f64) -> String {
    if b <= 0.0 {
        return "n/a".into();
    }
    format!("{:.1}×", a / b)
}

/// A process's CPU time and memory at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcSample {
    /// utime + stime.
    pub cpu: Duration,
    /// VmRSS, KiB.
    pub rss_kib: u64,
    /// VmHWM (peak resident set since start or the last reset), KiB.
    pub hwm_kib: u64,
}

pub fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// Clock ticks per second for `/proc/PID/stat` (`getconf CLK_TCK`; 100 on Linux).
pub fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

pub fn sample(pid: u32, ticks: u64) -> anyhow::Result<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).context("malformed /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11).and_then(|f| f.parse().ok()).context("utime")?;
    let stime: u64 = fields.get(12).and_then(|f| f.parse().ok()).context("stime")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = |key: &str| -> u64 {
        status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
    };
    Ok(ProcSample {
        cpu: Duration::from_micros((utime + stime) * 1_000_000 / ticks.max(1)),
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
    })
}

/// Resets VmHWM to the current RSS (Linux ≥ 4.0), so a peak is per scenario.
pub fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = Summary::of((1..=100).map(Duration::from_millis).collect());
        assert_eq!(
            (s.p50, s.p90, s.p99, s.max),
            (Duration::from_millis(50), Duration::from_millis(90), Duration::from_millis(99), Duration::from_millis(100))
        );
        assert_eq!(Summary::of(vec![Duration::from_millis(7)]).p99, Duration::from_millis(7));
    }

    #[test]
    fn samples_this_process() {
        let s = sample(std::process::id(), clock_ticks()).unwrap();
        assert!(s.rss_kib > 0 && s.hwm_kib >= s.rss_kib);
    }
}
