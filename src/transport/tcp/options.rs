//! The TCP transport's instance options: [`DeviceOptions`] and the table
//! ([`OPTIONS`]) that declares each of them once — name, default, help,
//! parser, printer — for dat.conf, the defaults and what an IA reports.
//!
//! Numbers are plain decimal digits (no sign, no blanks, no unit); a value
//! out of range is malformed (the kernel's limits for the socket options).

use std::time::Duration;

use crate::transport::options::{self, OptionDecl};

/// How an [`crate::transport::tcp::IwarpDevice`] behaves on the
/// wire (dat.conf instance options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Ask for CRC32c on every FPDU (`crc=on`). A peer's request turns it
    /// on regardless.
    pub crc: bool,
    /// Complete Sends and RDMA Writes when handed to TCP (iWARP's local
    /// completion, `ack=local`) instead of acknowledging them with
    /// zero-length reads, for peers that never answer one.
    pub local_completion: bool,
    /// Size FPDUs to the connection's TCP MSS (`fpdu=mss`) instead of the
    /// 16-bit limit.
    pub fpdu_mss: bool,
    /// How long a Send that found no posted receive holds its connection.
    pub rnr_timeout: Duration,
    /// Silence after which TCP keepalive probes start, the time between
    /// probes and how many go unanswered before the connection is broken.
    pub keepalive_idle: Duration,
    pub keepalive_interval: Duration,
    pub keepalive_count: u32,
    /// How long sent data may stay unacknowledged before the connection is
    /// broken (`TCP_USER_TIMEOUT`).
    pub user_timeout: Duration,
}

impl Default for DeviceOptions {
    /// Every option at the default [`OPTIONS`] declares.
    fn default() -> Self {
        options::defaults(
            &OPTIONS,
            DeviceOptions {
                crc: false,
                local_completion: false,
                fpdu_mss: false,
                rnr_timeout: Duration::ZERO,
                keepalive_idle: Duration::ZERO,
                keepalive_interval: Duration::ZERO,
                keepalive_count: 0,
                user_timeout: Duration::ZERO,
            },
        )
    }
}

/// Linux's limits for `TCP_KEEPIDLE`, `TCP_KEEPINTVL` (seconds) and
/// `TCP_KEEPCNT`; larger values make `setsockopt` fail.
const MAX_KEEPALIVE_SECS: u64 = 32_767;
const MAX_KEEPALIVE_COUNT: u64 = 127;
/// `TCP_USER_TIMEOUT` is an `int` of milliseconds.
const MAX_USER_TIMEOUT_MS: u64 = i32::MAX as u64;

/// The TCP transport's options, in the order an IA reports them.
pub static OPTIONS: [OptionDecl<DeviceOptions>; 6] = [
    OptionDecl {
        name: "crc",
        default: "off",
        help: "on|off: ask for MPA CRC32c on every FPDU (used anyway when the peer asks)",
        parse: |v, o| switch(v, "on", "off").map(|b| o.crc = b).is_some(),
        print: |o| pick(o.crc, "on", "off"),
    },
    OptionDecl {
        name: "ack",
        default: "read",
        help: "read|local: a Send or RDMA Write completes once the peer placed it, \
               or when handed to TCP",
        parse: |v, o| {
            switch(v, "local", "read")
                .map(|b| o.local_completion = b)
                .is_some()
        },
        print: |o| pick(o.local_completion, "local", "read"),
    },
    OptionDecl {
        name: "fpdu",
        default: "max",
        help: "max|mss: FPDUs up to the 16-bit limit, or no larger than the TCP MSS",
        parse: |v, o| switch(v, "mss", "max").map(|b| o.fpdu_mss = b).is_some(),
        print: |o| pick(o.fpdu_mss, "mss", "max"),
    },
    OptionDecl {
        name: "rnr_timeout",
        default: "2000",
        help: "<ms>: how long a Send that found no posted receive holds its connection",
        parse: |v, o| {
            bounded(v, 0, u64::MAX)
                .map(|ms| o.rnr_timeout = Duration::from_millis(ms))
                .is_some()
        },
        print: |o| o.rnr_timeout.as_millis().to_string(),
    },
    OptionDecl {
        name: "keepalive",
        default: "10,2,5",
        help: "<idle_s>,<interval_s>,<count>: TCP keepalive; each 1-32767, count 1-127",
        parse: parse_keepalive,
        print: |o| {
            format!(
                "{},{},{}",
                o.keepalive_idle.as_secs(),
                o.keepalive_interval.as_secs(),
                o.keepalive_count
            )
        },
    },
    OptionDecl {
        name: "user_timeout",
        default: "20000",
        help: "<ms>: TCP_USER_TIMEOUT, how long sent data may stay unacknowledged; \
               1-2147483647",
        parse: |v, o| {
            bounded(v, 1, MAX_USER_TIMEOUT_MS)
                .map(|ms| o.user_timeout = Duration::from_millis(ms))
                .is_some()
        },
        print: |o| o.user_timeout.as_millis().to_string(),
    },
];

/// `yes` → true, `no` → false, anything else → `None`.
fn switch(v: &str, yes: &str, no: &str) -> Option<bool> {
    match v {
        _ if v == yes => Some(true),
        _ if v == no => Some(false),
        _ => None,
    }
}

fn pick(b: bool, yes: &str, no: &str) -> String {
    if b { yes } else { no }.to_string()
}

fn parse_keepalive(v: &str, o: &mut DeviceOptions) -> bool {
    let mut parts = v.split(',');
    let (Some(idle), Some(interval), Some(count), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(idle), Some(interval), Some(count)) = (
        bounded(idle, 1, MAX_KEEPALIVE_SECS),
        bounded(interval, 1, MAX_KEEPALIVE_SECS),
        bounded(count, 1, MAX_KEEPALIVE_COUNT),
    ) else {
        return false;
    };
    o.keepalive_idle = Duration::from_secs(idle);
    o.keepalive_interval = Duration::from_secs(interval);
    // count ≤ 127.
    o.keepalive_count = count as u32;
    true
}

/// A plain decimal number (digits only) within `min..=max`.
fn bounded(digits: &str, min: u64, max: u64) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| (min..=max).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `tokens`; returns the options and the tokens not understood.
    fn parse(tokens: &str) -> (DeviceOptions, Vec<String>) {
        let tokens: Vec<&str> = tokens.split_ascii_whitespace().collect();
        let mut o = DeviceOptions::default();
        let unknown = options::parse_tokens(&OPTIONS, &tokens, &mut o);
        (o, unknown.iter().map(|&i| tokens[i].to_owned()).collect())
    }

    #[test]
    fn defaults() {
        let o = DeviceOptions::default();
        assert!(!o.crc && !o.local_completion && !o.fpdu_mss);
        assert_eq!(o.rnr_timeout, crate::transport::tcp::DEFAULT_RNR_TIMEOUT);
        assert_eq!(o.keepalive_idle, Duration::from_secs(10));
        assert_eq!(o.keepalive_interval, Duration::from_secs(2));
        assert_eq!(o.keepalive_count, 5);
        assert_eq!(o.user_timeout, Duration::from_secs(20));
    }

    #[test]
    fn every_option() {
        let (o, unknown) =
            parse("crc=on ack=local fpdu=mss rnr_timeout=250 keepalive=30,5,3 user_timeout=60000");
        assert!(unknown.is_empty(), "{unknown:?}");
        assert!(o.crc && o.local_completion && o.fpdu_mss);
        assert_eq!(o.rnr_timeout, Duration::from_millis(250));
        assert_eq!(o.keepalive_idle, Duration::from_secs(30));
        assert_eq!(o.keepalive_interval, Duration::from_secs(5));
        assert_eq!(o.keepalive_count, 3);
        assert_eq!(o.user_timeout, Duration::from_millis(60_000));
        let shown = options::values(&OPTIONS, &o);
        assert_eq!(
            shown,
            [
                ("crc", "on".to_string()),
                ("ack", "local".to_string()),
                ("fpdu", "mss".to_string()),
                ("rnr_timeout", "250".to_string()),
                ("keepalive", "30,5,3".to_string()),
                ("user_timeout", "60000".to_string()),
            ]
        );

        // The other value of each switch, and a later token overriding.
        let (o, unknown) = parse("crc=on crc=off ack=local ack=read fpdu=mss fpdu=max");
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(o, DeviceOptions::default());
    }

    #[test]
    fn edges_of_the_ranges() {
        let (o, _) = parse("rnr_timeout=0 keepalive=1,1,1 user_timeout=1");
        assert_eq!(o.rnr_timeout, Duration::ZERO);
        assert_eq!(
            (o.keepalive_idle, o.keepalive_interval, o.keepalive_count),
            (Duration::from_secs(1), Duration::from_secs(1), 1)
        );
        assert_eq!(o.user_timeout, Duration::from_millis(1));
        let (o, unknown) = parse(
            "rnr_timeout=18446744073709551615 keepalive=32767,32767,127 user_timeout=2147483647",
        );
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(o.rnr_timeout, Duration::from_millis(u64::MAX));
        assert_eq!(o.keepalive_idle, Duration::from_secs(32_767));
        assert_eq!(o.keepalive_interval, Duration::from_secs(32_767));
        assert_eq!(o.keepalive_count, 127);
        assert_eq!(o.user_timeout, Duration::from_millis(2_147_483_647));
    }

    #[test]
    fn bad_values_are_unknown_and_change_nothing() {
        let bad = [
            "crc=yes",
            "crc=ON",
            "crc=",
            "crc",
            "ack=remote",
            "ack=",
            "fpdu=1500",
            "fpdu=",
            "rnr_timeout=",
            "rnr_timeout=-1",
            "rnr_timeout=+5",
            "rnr_timeout=1.5",
            "rnr_timeout=10ms",
            "rnr_timeout=18446744073709551616",
            "keepalive=",
            "keepalive=30",
            "keepalive=30,5",
            "keepalive=30,5,3,1",
            "keepalive=30,5,",
            "keepalive=,5,3",
            "keepalive=0,5,3",
            "keepalive=30,0,3",
            "keepalive=30,5,0",
            "keepalive=32768,5,3",
            "keepalive=30,32768,3",
            "keepalive=30,5,128",
            "keepalive=30,x,3",
            "user_timeout=0",
            "user_timeout=2147483648",
            "user_timeout=-1",
            "user_timeout=",
            "mtu=1500",
        ];
        for token in bad {
            let (o, unknown) = parse(token);
            assert_eq!(unknown, [token], "{token}");
            assert_eq!(o, DeviceOptions::default(), "{token}");
        }
        // A bad token leaves an earlier good one in force.
        let (o, unknown) = parse("crc=on crc=maybe keepalive=9,9,9 keepalive=9,9");
        assert!(o.crc);
        assert_eq!(o.keepalive_idle, Duration::from_secs(9));
        assert_eq!(unknown, ["crc=maybe", "keepalive=9,9"]);
    }

    /// docs/configuration.md documents every option with its default.
    #[test]
    fn the_configuration_guide_lists_every_option_with_its_default() {
        let doc = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/configuration.md"
        ));
        for d in &OPTIONS {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}=", d.name)))
                .unwrap_or_else(|| panic!("docs/configuration.md: no row for {}", d.name));
            assert!(row.contains(&format!("| `{}` |", d.default)), "{row}");
        }
    }
}
