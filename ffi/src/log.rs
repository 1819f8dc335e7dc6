//! Diagnostics through `tracing`, installed lazily by the library.
//!
//! By default warnings and errors (a malformed dat.conf line, a provider
//! library that does not load) go to stderr. `DAT_LOG` (error, warn, info,
//! debug, trace) or the 1.2 variable `DAT_DBG_TYPE` (any non-zero mask:
//! debug; 0xff or more: trace) raise the level; `DAT_DBG_DEST` keeps its
//! meaning: bit 0x1 stdout, bit 0x2 syslog (default stderr).

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};

struct DatSubscriber {
    max: Level,
    stdout: bool,
    syslog: bool,
    next_id: AtomicUsize,
}

fn parse_mask(v: &str) -> Option<i64> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else if v.len() > 1 && v.starts_with('0') {
        i64::from_str_radix(&v[1..], 8).ok()
    } else {
        v.parse().ok()
    }
}

fn level_from_env() -> Level {
    if let Ok(v) = std::env::var("DAT_LOG") {
        return match v.to_ascii_lowercase().as_str() {
            "error" => Level::ERROR,
            "info" => Level::INFO,
            "debug" => Level::DEBUG,
            "trace" => Level::TRACE,
            _ => Level::WARN,
        };
    }
    match std::env::var("DAT_DBG_TYPE")
        .ok()
        .as_deref()
        .and_then(parse_mask)
    {
        Some(m) if m >= 0xff => Level::TRACE,
        Some(m) if m != 0 => Level::DEBUG,
        _ => Level::WARN,
    }
}

/// Installs the subscriber once (unless the process already has one).
pub(crate) fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dest = std::env::var("DAT_DBG_DEST")
            .ok()
            .as_deref()
            .and_then(parse_mask)
            .unwrap_or(0);
        let sub = DatSubscriber {
            max: level_from_env(),
            stdout: dest & 1 != 0,
            syslog: dest & 2 != 0,
            next_id: AtomicUsize::new(1),
        };
        let _ = tracing::subscriber::set_global_default(sub);
    });
}

/// One tracing event formatted as a log line: its message, then its other
/// fields.
struct EventLine(String);

impl Visit for EventLine {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.push_str(&format!(" {value:?}"));
        } else {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push(' ');
            self.0.push_str(value);
        } else {
            self.0.push_str(&format!(" {}={value}", field.name()));
        }
    }
}

impl Subscriber for DatSubscriber {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        *m.level() <= self.max
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) as u64)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut line = EventLine(format!(
            "libdat[{}] {} {}:",
            std::process::id(),
            e.metadata().level(),
            e.metadata().target()
        ));
        e.record(&mut line);
        if self.syslog {
            if let Ok(c) = std::ffi::CString::new(line.0.replace('\0', "")) {
                // SAFETY: a constant format string and a NUL-terminated argument.
                unsafe {
                    libc::syslog(libc::LOG_USER | libc::LOG_DEBUG, c"%s".as_ptr(), c.as_ptr())
                };
            }
        }
        // One write per line: lines of several processes sharing a
        // descriptor do not interleave.
        line.0.push('\n');
        if self.stdout {
            let _ = std::io::stdout().lock().write_all(line.0.as_bytes());
        } else if !self.syslog {
            let _ = std::io::stderr().lock().write_all(line.0.as_bytes());
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
