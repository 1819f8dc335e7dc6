//! What one run of one size produced, and its summary.

use serde::Serialize;

/// Samples of one run (one size over one transport).
#[derive(Default, Debug, Clone)]
pub struct Samples {
    /// Per-iteration times in nanoseconds (see the help for what each is).
    pub times_ns: Vec<u64>,
    /// Iterations done.
    pub iters: u64,
    /// Seconds of the data phases (the control exchanges between batches
    /// are not counted).
    pub secs: f64,
}

/// One row of results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figures {
    pub size: u64,
    pub iterations: u64,
    pub seconds: f64,
    /// None when no per-iteration time exists (TCP baseline --bw).
    pub t_min_us: Option<f64>,
    pub t_median_us: Option<f64>,
    pub t_p99_us: Option<f64>,
    /// Payload bytes per second one way, in 10^6 (none for conn).
    pub mb_per_s: Option<f64>,
    /// Round trips (lat) or messages (bw) per second, in millions (none for conn).
    pub mmsg_per_s: Option<f64>,
    /// Connections per second (conn only).
    pub conn_per_s: Option<f64>,
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(sorted: &[u64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0
    }
}

impl Samples {
    pub fn figures(&self, size: u64, conn: bool) -> Figures {
        let mut t = self.times_ns.clone();
        t.sort_unstable();
        let secs = self.secs.max(1e-9);
        let any = !t.is_empty();
        let us = |ns: f64| any.then_some(ns / 1000.0);
        Figures {
            size,
            iterations: self.iters,
            seconds: self.secs,
            t_min_us: us(t.first().copied().unwrap_or(0) as f64),
            t_median_us: us(median(&t)),
            t_p99_us: us(percentile(&t, 99.0) as f64),
            mb_per_s: (!conn).then(|| (size * self.iters) as f64 / secs / 1e6),
            mmsg_per_s: (!conn).then(|| self.iters as f64 / secs / 1e6),
            conn_per_s: conn.then(|| self.iters as f64 / secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary() {
        let s = Samples {
            times_ns: (1..=100).rev().map(|v| v * 1000).collect(),
            iters: 100,
            secs: 0.5,
        };
        let f = s.figures(1000, false);
        assert_eq!(f.t_min_us, Some(1.0));
        assert_eq!(f.t_median_us, Some(50.5));
        assert_eq!(f.t_p99_us, Some(99.0));
        assert_eq!(f.mb_per_s, Some(0.2));
        assert_eq!(f.mmsg_per_s, Some(0.0002));
        assert_eq!(f.conn_per_s, None);
        let none = Samples {
            times_ns: Vec::new(),
            ..s.clone()
        }
        .figures(8, false);
        assert_eq!(none.t_median_us, None);
        let c = s.figures(8, true);
        assert_eq!(c.conn_per_s, Some(200.0));
        assert_eq!(c.mb_per_s, None);
    }
}
