//! dat.conf as the tools see it: where the library looks for it and what
//! each line says, with line numbers and a message for every line the
//! library skips. An independent reading of the format (spec `registry.md`
//! §3.2, §3.3, with this project's documented changes: docs/configuration.md,
//! "The dat.conf format"), so the tools can say *where* an entry of
//! `dat_registry_list_providers` comes from and *why* a line gave no entry
//! without asking the library.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// `DAT_NAME_MAX_LENGTH`: an IA name must be shorter.
const NAME_MAX: usize = 256;

/// Where the dat.conf the library reads is, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `$DAT_OVERRIDE` names it (whether or not it exists).
    Override(PathBuf),
    /// The first of `/etc/dat/dat.conf`, `/etc/dat.conf` that exists.
    Default(PathBuf),
    /// No `$DAT_OVERRIDE` and neither default file exists.
    Absent,
}

impl Location {
    /// The path, if there is one to read.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Location::Override(p) | Location::Default(p) => Some(p),
            Location::Absent => None,
        }
    }
}

/// The default dat.conf paths, in the order the library tries them.
pub const DEFAULT_PATHS: [&str; 2] = ["/etc/dat/dat.conf", "/etc/dat.conf"];

/// The library's search order: `$DAT_OVERRIDE` if set (even empty or
/// missing: there is no fallback), else the first default path that exists.
pub fn locate() -> Location {
    locate_with(std::env::var_os("DAT_OVERRIDE").map(PathBuf::from), |p| {
        p.exists()
    })
}

/// [`locate`] with the environment and the file system given.
pub fn locate_with(over: Option<PathBuf>, exists: impl Fn(&Path) -> bool) -> Location {
    if let Some(p) = over {
        return Location::Override(p);
    }
    DEFAULT_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| exists(p))
        .map_or(Location::Absent, Location::Default)
}

/// A record that becomes a registry entry (`u` API, `default`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Field 1, raw bytes (the registry key compares bytes).
    pub ia_name: Vec<u8>,
    pub api_major: u32,
    pub api_minor: u32,
    pub thread_safe: bool,
    /// Field 5, verbatim: what `dlopen` is given.
    pub library: String,
    /// Field 6.
    pub provider_version: String,
    /// Field 7 (quotes and escapes removed).
    pub instance_data: String,
    /// Field 8.
    pub platform_data: String,
    /// 1-based line number.
    pub line: usize,
}

impl Entry {
    /// The IA name as text (lossy).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.ia_name).into_owned()
    }
}

/// How bad a [`Problem`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The line is malformed: the library skips it.
    Error,
    /// The line is used (or deliberately ignored) but looks wrong.
    Warning,
}

/// Something wrong with one line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub line: usize,
    pub severity: Severity,
    pub message: String,
}

impl Problem {
    fn error(line: usize, message: String) -> Problem {
        Problem {
            line,
            severity: Severity::Error,
            message,
        }
    }

    fn warning(line: usize, message: String) -> Problem {
        Problem {
            line,
            severity: Severity::Warning,
            message,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.severity {
            Severity::Error => write!(f, "{}", self.message),
            Severity::Warning => write!(f, "warning: {}", self.message),
        }
    }
}

/// Parses the bytes of a dat.conf: the entries in file order (duplicates
/// included: the registry keeps the first) and the problems found.
pub fn parse(text: &[u8]) -> (Vec<Entry>, Vec<Problem>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let fields = match split_fields(raw) {
            Ok(f) if f.is_empty() => continue,
            Ok(f) => f,
            Err(why) => {
                problems.push(Problem::error(line, why));
                continue;
            }
        };
        match record(fields, line) {
            Ok(Some((entry, notes))) => {
                problems.extend(notes.into_iter().map(|n| Problem::warning(line, n)));
                entries.push(entry);
            }
            Ok(None) => {}
            Err(why) => problems.push(Problem::error(line, why)),
        }
    }
    (entries, problems)
}

/// The fields of one line (empty for a blank or comment line).
fn split_fields(line: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut fields = Vec::new();
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b' ' | b'\t' => i += 1,
            b'#' => break,
            b'"' => {
                let mut value = Vec::new();
                let mut j = i + 1;
                loop {
                    match line.get(j) {
                        None => return Err("unterminated quoted field (no closing '\"')".into()),
                        Some(b'"') => break,
                        Some(b'\\') if j + 1 < line.len() => {
                            value.push(line[j + 1]);
                            j += 2;
                            continue;
                        }
                        Some(b'\\') => {
                            return Err("unterminated quoted field (no closing '\"')".into())
                        }
                        Some(&c) => value.push(c),
                    }
                    j += 1;
                }
                fields.push(value);
                i = j + 1;
            }
            _ => {
                // To the next blank; an unescaped quote ends the field
                // after itself. The first byte never escapes the second.
                let start = i;
                let mut j = i + 1;
                let mut escape = false;
                while j < line.len() {
                    let c = line[j];
                    if c == b' ' || c == b'\t' {
                        break;
                    }
                    j += 1;
                    if c == b'"' && !escape {
                        break;
                    }
                    escape = c == b'\\' && !escape;
                }
                fields.push(line[start..j].to_vec());
                i = j;
            }
        }
    }
    Ok(fields)
}

/// A field quoted in a message.
fn show(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    if text.chars().count() > 48 {
        format!("{:?}...", text.chars().take(48).collect::<String>())
    } else {
        format!("{text:?}")
    }
}

/// One record: `Some` entry (with notes) if it is installed, `None` if it
/// is a valid `k` or `nondefault` record, `Err` if malformed.
#[allow(clippy::type_complexity)]
fn record(fields: Vec<Vec<u8>>, line: usize) -> Result<Option<(Entry, Vec<String>)>, String> {
    if fields.len() != 8 {
        return Err(format!(
            "{} field{} where a record has 8 (IA name, version, thread safety, default, \
             library, provider version, instance data, platform information)",
            fields.len(),
            if fields.len() == 1 { "" } else { "s" }
        ));
    }
    if let Some(n) = fields.iter().position(|f| f.contains(&0)) {
        return Err(format!("field {} contains a NUL byte", n + 1));
    }
    let mut it = fields.into_iter();
    let mut next = || it.next().unwrap_or_default();
    let (name, api, threads, dflt, library, pversion, instance, platform) = (
        next(),
        next(),
        next(),
        next(),
        next(),
        next(),
        next(),
        next(),
    );
    let (user, api_major, api_minor) = api_version(&api)?;
    let mut notes = Vec::new();
    let thread_safe = keyword(&threads, 3, "threadsafe", "nonthreadsafe", &mut notes)?;
    let is_default = keyword(&dflt, 4, "default", "nondefault", &mut notes)?;
    provider_version(&pversion)?;
    let library = String::from_utf8(library)
        .map_err(|_| "field 5 (library path) is not valid UTF-8".to_string())?;
    let instance_data = String::from_utf8(instance)
        .map_err(|_| "field 7 (instance data) is not valid UTF-8".to_string())?;
    if !user || !is_default {
        return Ok(None);
    }
    if name.len() >= NAME_MAX {
        return Err(format!(
            "IA name is {} bytes long; at most {} are allowed",
            name.len(),
            NAME_MAX - 1
        ));
    }
    Ok(Some((
        Entry {
            ia_name: name,
            api_major,
            api_minor,
            thread_safe,
            library,
            provider_version: String::from_utf8_lossy(&pversion).into_owned(),
            instance_data,
            platform_data: String::from_utf8_lossy(&platform).into_owned(),
            line,
        },
        notes,
    )))
}

/// Field 2: (is `u`, major, minor).
fn api_version(f: &[u8]) -> Result<(bool, u32, u32), String> {
    let bad = |why: &str| format!("field 2 (API version) {}: {why}", show(f));
    let user = match f.first() {
        Some(b'u') => true,
        Some(b'k') => false,
        _ => return Err(bad("must be u<major>.<minor>, e.g. u1.2")),
    };
    let rest = &f[1..];
    let dot = rest
        .iter()
        .position(|&b| b == b'.')
        .ok_or_else(|| bad("no '.' between major and minor"))?;
    let number = |d: &[u8]| -> Option<u32> {
        d.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit()
                .then_some(())
                .and_then(|()| n.checked_mul(10)?.checked_add(u32::from(c - b'0')))
        })
    };
    let major = number(&rest[..dot]).ok_or_else(|| bad("major is not a decimal number"))?;
    let minor = number(&rest[dot + 1..]).ok_or_else(|| bad("minor is not a decimal number"))?;
    Ok((user, major, minor))
}

/// Fields 3 and 4: `yes` / `no` keyword by prefix.
fn keyword(
    f: &[u8],
    n: usize,
    yes: &str,
    no: &str,
    notes: &mut Vec<String>,
) -> Result<bool, String> {
    for (word, value) in [(yes, true), (no, false)] {
        if f.starts_with(word.as_bytes()) {
            if f.len() > word.len() {
                notes.push(format!(
                    "field {n} {} is read as '{word}' (only its beginning matches)",
                    show(f)
                ));
            }
            return Ok(value);
        }
    }
    Err(format!("field {n} {} must be '{yes}' or '{no}'", show(f)))
}

/// Field 6: `<id>.<major>.<minor>`.
fn provider_version(f: &[u8]) -> Result<(), String> {
    let parts: Vec<&[u8]> = f.splitn(2, |&b| b == b'.').collect();
    let ok = match parts.as_slice() {
        [id, nums] if !id.is_empty() => {
            let n: Vec<&[u8]> = nums.split(|&b| b == b'.').collect();
            n.len() == 2
                && n.iter()
                    .all(|d| !d.is_empty() && d.iter().all(u8::is_ascii_digit))
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "field 6 (provider version) {} must be <id>.<major>.<minor>, e.g. dapl.1.2",
            show(f)
        ))
    }
}

/// True when field 5 selects this project's built-in provider, as the
/// library decides: the word `builtin`, or a file named `libdat.so.1` /
/// `libdat.so` in any directory.
pub fn is_builtin_library(library: &str) -> bool {
    let basename = library.rsplit('/').next().unwrap_or(library);
    library == "builtin" || basename == "libdat.so.1" || basename == "libdat.so"
}

/// The transport the instance data of a built-in IA asks for: the value of
/// its last `transport=` token (tokens are blank-separated), if any. The tools read
/// nothing else of it: the library reports the rest of an IA's
/// configuration itself once the IA is open.
pub fn requested_transport(instance_data: &str) -> Option<&str> {
    instance_data
        .split_ascii_whitespace()
        .filter_map(|t| t.strip_prefix("transport="))
        .rfind(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<Entry> {
        let (e, p) = parse(text.as_bytes());
        assert!(p.is_empty(), "{p:?}");
        e
    }

    fn problem(text: &str) -> Problem {
        let (e, p) = parse(text.as_bytes());
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(p.len(), 1, "{p:?}");
        p.into_iter().next().unwrap()
    }

    const OFED: &str =
        "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"ib0 0\" \"\"";

    #[test]
    fn search_order() {
        let none = |_: &Path| false;
        let all = |_: &Path| true;
        let second = |p: &Path| p == Path::new("/etc/dat.conf");
        assert_eq!(
            locate_with(Some("/x".into()), none),
            Location::Override("/x".into())
        );
        assert_eq!(
            locate_with(None, all),
            Location::Default("/etc/dat/dat.conf".into())
        );
        assert_eq!(
            locate_with(None, second),
            Location::Default("/etc/dat.conf".into())
        );
        assert_eq!(locate_with(None, none), Location::Absent);
        assert_eq!(Location::Absent.path(), None);
    }

    #[test]
    fn ofed_and_illumos_lines() {
        let e = &entries(OFED)[0];
        assert_eq!(e.name(), "OpenIB-cma");
        assert_eq!((e.api_major, e.api_minor, e.thread_safe), (1, 2, false));
        assert_eq!(e.library, "libdaplcma.so.1");
        assert_eq!(e.instance_data, "ib0 0");
        assert_eq!(e.platform_data, "");
        let e = &entries(
            "# hdr\n\nibp0  u1.2  threadsafe\tdefault  udapl_tavor.so.1  SUNW.1.0  \" \"  \"driver_name=tavor\"  # c\n",
        )[0];
        assert_eq!(e.line, 3);
        assert!(e.thread_safe);
        assert_eq!(e.instance_data, " ");
        assert_eq!(e.platform_data, "driver_name=tavor");
    }

    #[test]
    fn quoting_escapes_and_crlf() {
        let e = &entries("a u1.2 nonthreadsafe default x\\y p.1.0 \"q\\\"u\\\\o\" \"\"\r\n")[0];
        assert_eq!(e.library, "x\\y");
        assert_eq!(e.instance_data, "q\"u\\o");
        // An unescaped quote inside an unquoted field ends it after itself.
        let (e, p) = parse(b"a u1.2 nonthreadsafe default l\"ib p.1.0 i x");
        assert!(e.is_empty());
        assert!(p[0].message.contains("9 fields"), "{p:?}");
    }

    #[test]
    fn unused_records_are_silent() {
        assert!(entries("a k1.2 nonthreadsafe default l p.1.0 i x").is_empty());
        assert!(entries("a u1.2 nonthreadsafe nondefault l p.1.0 i x").is_empty());
    }

    #[test]
    fn malformed_lines_name_what_is_wrong() {
        let p = problem("\n\nbroken line\n");
        assert_eq!((p.line, p.severity), (3, Severity::Error));
        assert!(
            p.message.starts_with("2 fields where a record has 8"),
            "{p}"
        );
        assert!(problem("a u1.2 nonthreadsafe default l p.1.0 \"open x")
            .message
            .contains("unterminated"));
        assert!(problem("a x1.2 nonthreadsafe default l p.1.0 i x")
            .message
            .contains("field 2"));
        assert!(problem("a u12 nonthreadsafe default l p.1.0 i x")
            .message
            .contains("no '.'"));
        assert!(problem("a u1.2 yes default l p.1.0 i x")
            .message
            .contains("field 3"));
        assert!(problem("a u1.2 threadsafe maybe l p.1.0 i x")
            .message
            .contains("field 4"));
        assert!(problem("a u1.2 threadsafe default l p.1 i x")
            .message
            .contains("field 6"));
        let long = "n".repeat(256);
        assert!(
            problem(&format!("{long} u1.2 threadsafe default l p.1.0 i x"))
                .message
                .contains("256 bytes")
        );
    }

    #[test]
    fn prefix_keywords_are_used_with_a_warning() {
        let (e, p) = parse(b"a u1.2 threadsafeX default l p.1.0 i x");
        assert!(e[0].thread_safe);
        assert_eq!(p[0].severity, Severity::Warning);
        assert!(p[0].to_string().starts_with("warning: field 3"), "{}", p[0]);
    }

    #[test]
    fn builtin_library_names() {
        for l in [
            "builtin",
            "libdat.so.1",
            "/usr/lib/libdat.so",
            "x/libdat.so.1",
        ] {
            assert!(is_builtin_library(l), "{l}");
        }
        for l in ["Builtin", "libdat.so.2", "libdaplcma.so.1"] {
            assert!(!is_builtin_library(l), "{l}");
        }
    }

    #[test]
    fn requested_transports() {
        assert_eq!(requested_transport("transport=shm"), Some("shm"));
        assert_eq!(
            requested_transport("netdev=eth1\ttransport=tcp crc=on transport=verbs"),
            Some("verbs")
        );
        assert_eq!(requested_transport("ib0 0"), None);
        assert_eq!(requested_transport("mytransport=x transport="), None);
        assert_eq!(requested_transport(""), None);
    }
}
