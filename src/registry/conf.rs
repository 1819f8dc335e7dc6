//! dat.conf parser: the static-registry file of uDAPL / DAT 1.2.
//!
//! Pure and safe: [`parse`] turns the bytes of a dat.conf into the records to
//! install (API type `u`, flag `default`, in file order, duplicates kept)
//! plus one [`ConfWarning`] per malformed record; it never aborts and
//! resumes at the next line. [`parse_file`] only adds the read. Which record
//! wins (the first per key), loading libraries and finding the file belong
//! to the registry. The format and where it deliberately differs from the
//! illumos reference: docs/configuration.md, "The dat.conf format".

use crate::transport::{self, AddressFamily, InstanceOptions, TransportKind};
use std::fmt;
use std::io;
use std::path::Path;

/// One record of dat.conf that passed validation (field 2 starts with 'u' and field 4 is `default`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfEntry {
    /// Field 1, raw bytes (< 256 bytes, else the record is skipped with a warning).
    pub ia_name: Vec<u8>,
    /// Field 2 `u<major>.<minor>`: the major number.
    pub api_major: u32,
    /// Field 2: the minor number.
    pub api_minor: u32,
    /// Field 3.
    pub thread_safe: bool,
    /// Field 5, verbatim.
    pub library: String,
    /// Field 6, verbatim (validated as `<id>.<major>.<minor>`).
    pub provider_version: String,
    /// Field 7 (quotes removed, escapes applied).
    pub instance_data: String,
    /// Field 8.
    pub platform_data: String,
    /// 1-based line number where the record starts.
    pub line: usize,
}

/// A problem found while parsing; the parser never fails as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfWarning {
    /// 1-based line number of the record concerned.
    pub line: usize,
    /// What is wrong, and whether the record was skipped.
    pub message: String,
}

impl fmt::Display for ConfWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dat.conf line {}: {}", self.line, self.message)
    }
}

/// Length limit of an IA name including its NUL (`DAT_NAME_MAX_LENGTH`).
const NAME_MAX_LENGTH: usize = 256;

/// Number of fields in a record.
const FIELD_COUNT: usize = 8;

/// Longest excerpt of a field quoted in a warning.
const EXCERPT_MAX: usize = 64;

/// Parse the text of a dat.conf. Never panics, never aborts: a malformed record is skipped
/// (with a warning naming its line), parsing goes on with the next line, so the rest of the file still loads.
pub fn parse(text: &[u8]) -> (Vec<ConfEntry>, Vec<ConfWarning>) {
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    for (index, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = index + 1;
        let content = raw.strip_suffix(b"\r").unwrap_or(raw);
        let tokens = match tokenize(content) {
            Ok(tokens) => tokens,
            Err(message) => {
                warnings.push(skipped(line, &message));
                continue;
            }
        };
        if tokens.is_empty() {
            continue; // blank or comment-only line
        }
        match parse_record(tokens, line) {
            Ok(Record::Installed(entry, notes)) => {
                warnings.extend(
                    notes
                        .into_iter()
                        .map(|message| ConfWarning { line, message }),
                );
                entries.push(entry);
            }
            Ok(Record::NotInstalled) => {}
            Err(message) => warnings.push(skipped(line, &message)),
        }
    }
    (entries, warnings)
}

/// Reads `path` and parses it; Err(io::Error) only if the file cannot be read.
pub fn parse_file(path: &Path) -> io::Result<(Vec<ConfEntry>, Vec<ConfWarning>)> {
    Ok(parse(&std::fs::read(path)?))
}

fn skipped(line: usize, message: &str) -> ConfWarning {
    ConfWarning {
        line,
        message: format!("{message}; record skipped"),
    }
}

/// Splits one line (without its newline) into tokens, per `registry.md` §3.3.
fn tokenize(line: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut tokens = Vec::new();
    let mut rest = line;
    while let Some((&first, after)) = rest.split_first() {
        match first {
            b' ' | b'\t' => rest = after,
            b'#' => break,
            b'"' => {
                let (token, next) = quoted_token(after)?;
                tokens.push(token);
                rest = next;
            }
            _ => {
                let len = unquoted_len(rest);
                let (token, next) = rest.split_at(len);
                tokens.push(token.to_vec());
                rest = next;
            }
        }
    }
    Ok(tokens)
}

/// Length of the unquoted token at the start of `s` (whose first byte is
/// neither blank, `#` nor `"`): up to the next blank, or up to and including
/// an unescaped `"`. The first byte is taken as is, never as an escape.
fn unquoted_len(s: &[u8]) -> usize {
    let mut escaped = false;
    for (i, &c) in s.iter().enumerate().skip(1) {
        match c {
            b' ' | b'\t' => return i,
            b'"' if !escaped => return i + 1,
            _ => escaped = c == b'\\' && !escaped,
        }
    }
    s.len()
}

/// Reads a quoted token whose opening quote has been consumed; returns its
/// value and the rest of the line after the closing quote.
fn quoted_token(s: &[u8]) -> Result<(Vec<u8>, &[u8]), String> {
    let mut value = Vec::new();
    let mut escaped = false;
    for (i, &c) in s.iter().enumerate() {
        if escaped {
            value.push(c);
            escaped = false;
        } else if c == b'\\' {
            escaped = true;
        } else if c == b'"' {
            return Ok((value, s.get(i + 1..).unwrap_or_default()));
        } else {
            value.push(c);
        }
    }
    Err("unterminated quoted string (missing closing '\"' before the end of the line)".to_owned())
}

/// Outcome of a well-formed record.
enum Record {
    /// `u` and `default`: to be installed; with notes about accepted oddities.
    Installed(ConfEntry, Vec<String>),
    /// A valid `k` or `nondefault` record.
    NotInstalled,
}

/// API type letter of field 2.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ApiType {
    User,
    Kernel,
}

/// Validates one tokenized, non-empty record; `Err` describes why it is malformed.
fn parse_record(tokens: Vec<Vec<u8>>, line: usize) -> Result<Record, String> {
    let count = tokens.len();
    let fields: [Vec<u8>; FIELD_COUNT] = tokens
        .try_into()
        .map_err(|_| format!("{count} field(s) where a record has {FIELD_COUNT}"))?;
    if let Some(n) = fields.iter().position(|f| f.contains(&0)) {
        return Err(format!("field {} contains a NUL byte", n + 1));
    }
    let [ia_name, api, thread, default, library, provider_version, instance, platform] = fields;

    let (api_type, api_major, api_minor) = parse_api_version(&api)?;
    let (thread_safe, thread_note) =
        parse_keyword(&thread, 3, "thread safety", "threadsafe", "nonthreadsafe")?;
    let (is_default, default_note) =
        parse_keyword(&default, 4, "default flag", "default", "nondefault")?;
    check_provider_version(&provider_version)?;
    let library = String::from_utf8(library)
        .map_err(|_| "field 5 (library path) is not valid UTF-8".to_owned())?;
    let instance_data = String::from_utf8(instance)
        .map_err(|_| "field 7 (instance data) is not valid UTF-8".to_owned())?;

    if api_type != ApiType::User || !is_default {
        return Ok(Record::NotInstalled);
    }
    if ia_name.len() >= NAME_MAX_LENGTH {
        return Err(format!(
            "field 1 (IA name) is {} bytes long, the limit is {}",
            ia_name.len(),
            NAME_MAX_LENGTH - 1
        ));
    }
    let notes = [thread_note, default_note].into_iter().flatten().collect();
    let entry = ConfEntry {
        ia_name,
        api_major,
        api_minor,
        thread_safe,
        library,
        provider_version: String::from_utf8_lossy(&provider_version).into_owned(),
        instance_data,
        platform_data: String::from_utf8_lossy(&platform).into_owned(),
        line,
    };
    Ok(Record::Installed(entry, notes))
}

/// Field 2: `u` or `k`, decimal major, `.`, decimal minor (empty digits read as 0).
fn parse_api_version(field: &[u8]) -> Result<(ApiType, u32, u32), String> {
    let bad = |why: &str| {
        format!(
            "field 2 (API version) {}: {why}, expected u<major>.<minor>",
            excerpt(field)
        )
    };
    let (api_type, numbers) = match field.split_first() {
        Some((b'u', rest)) => (ApiType::User, rest),
        Some((b'k', rest)) => (ApiType::Kernel, rest),
        _ => return Err(bad("does not start with 'u' or 'k'")),
    };
    let dot = numbers
        .iter()
        .position(|&b| b == b'.')
        .ok_or_else(|| bad("no '.'"))?;
    let (major, minor) = (&numbers[..dot], &numbers[dot + 1..]);
    let major = decimal(major).ok_or_else(|| bad("major is not a 32-bit decimal number"))?;
    let minor = decimal(minor).ok_or_else(|| bad("minor is not a 32-bit decimal number"))?;
    Ok((api_type, major, minor))
}

/// Decimal digits to `u32`; empty reads as 0 (reference `strtol`), any other
/// byte or an overflow gives `None`.
fn decimal(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        if d.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u32::from(d - b'0'))
        } else {
            None
        }
    })
}

/// Fields 3 and 4: `positive` → true, `negative` → false, by prefix as the
/// reference; returns a note when the match was only a prefix.
fn parse_keyword(
    field: &[u8],
    number: usize,
    name: &str,
    positive: &str,
    negative: &str,
) -> Result<(bool, Option<String>), String> {
    for (keyword, value) in [(positive, true), (negative, false)] {
        if field.starts_with(keyword.as_bytes()) {
            let note = (field.len() != keyword.len()).then(|| {
                format!(
                    "field {number} ({name}) {} read as '{keyword}' \
                     (prefix match, as the reference libdat); record installed",
                    excerpt(field)
                )
            });
            return Ok((value, note));
        }
    }
    Err(format!(
        "field {number} ({name}) {}: expected '{positive}' or '{negative}'",
        excerpt(field)
    ))
}

/// Field 6: `<id>.<major>.<minor>`, non-empty id and non-empty digit strings.
fn check_provider_version(field: &[u8]) -> Result<(), String> {
    let mut parts = field.splitn(2, |&b| b == b'.');
    let id = parts.next().unwrap_or_default();
    let numbers = parts.next().unwrap_or_default();
    let mut digits = numbers.split(|&b| b == b'.');
    let well_formed = !id.is_empty()
        && digits.clone().count() == 2
        && digits.all(|d| !d.is_empty() && d.iter().all(u8::is_ascii_digit));
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "field 6 (provider version) {}: expected <id>.<major>.<minor>",
            excerpt(field)
        ))
    }
}

/// A field quoted for a warning: lossy UTF-8, escaped, cut to a sane length.
fn excerpt(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    let mut out: String = text.chars().take(EXCERPT_MAX).collect();
    if text.chars().count() > EXCERPT_MAX {
        out.push_str("...");
    }
    format!("{out:?}")
}

/// Parameters for the built-in provider, parsed from field 7.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuiltinParams {
    /// `transport=` value: `tcp`, `shm` or `verbs`.
    pub transport: Option<String>,
    /// `netdev=` / `if=` value, or the first bare token.
    pub netdev: Option<String>,
    /// `device=` value: the RDMA device (verbs), e.g. `mlx5_0`.
    pub device: Option<String>,
    /// `family=` value: which of the network device's addresses.
    pub family: Option<AddressFamily>,
    /// `port=` value, or a bare number after the network device.
    pub port: Option<u32>,
    /// The transport's instance options, parsed by the transport's own
    /// table ([`transport::parse_options`]); defaults for those not given.
    pub options: InstanceOptions,
    /// Tokens not understood (unknown keys, bad values, extra bare tokens), verbatim.
    pub unknown: Vec<String>,
}

/// Transports the built-in provider knows.
const TRANSPORTS: [&str; 3] = ["tcp", "shm", "verbs"];

/// Parses the built-in provider's instance data: whitespace-separated
/// `transport=`, `netdev=` (alias `if=`), `device=`, `family=` and `port=` parameters
/// and the transport's instance options (any other `key=value`, parsed by
/// the transport named, [`transport::parse_options`]), or OFED-style bare
/// words (`"ib0 0"`: first bare word is the network device, a bare number
/// after the device is the port). A later `key=value` overrides an earlier
/// one; anything not understood (unknown key, unknown transport or family,
/// empty value, port that is not a `u32`, option the transport does not
/// take or malformed value, surplus bare word) lands in `unknown`
/// verbatim, in the order given, and changes nothing, so the caller can
/// warn about it.
pub fn parse_builtin_params(instance_data: &str) -> BuiltinParams {
    let mut params = BuiltinParams::default();
    let tokens: Vec<&str> = instance_data.split_ascii_whitespace().collect();
    // Indices of the tokens not understood, and of those for the transport.
    let mut unknown = Vec::new();
    let mut for_transport = Vec::new();
    for (i, token) in tokens.iter().copied().enumerate() {
        let understood = match token.split_once('=') {
            Some(("transport", value)) if TRANSPORTS.contains(&value) => {
                params.transport = Some(value.to_owned());
                true
            }
            Some(("netdev" | "if", value)) if !value.is_empty() => {
                params.netdev = Some(value.to_owned());
                true
            }
            Some(("device", value)) if !value.is_empty() => {
                params.device = Some(value.to_owned());
                true
            }
            Some(("family", value)) => AddressFamily::parse(value)
                .map(|f| params.family = Some(f))
                .is_some(),
            Some(("port", value)) => value.parse().map(|port| params.port = Some(port)).is_ok(),
            Some(("transport" | "netdev" | "if" | "device", _)) => false,
            Some(_) => {
                for_transport.push(i);
                true
            }
            None if params.netdev.is_none() => {
                params.netdev = Some(token.to_owned());
                true
            }
            None if params.port.is_none() => {
                token.parse().map(|port| params.port = Some(port)).is_ok()
            }
            None => false,
        };
        if !understood {
            unknown.push(i);
        }
    }
    let kind = params
        .transport
        .as_deref()
        .and_then(TransportKind::parse)
        .unwrap_or_default();
    let options: Vec<&str> = for_transport.iter().map(|&i| tokens[i]).collect();
    let (parsed, refused) = transport::parse_options(kind, &options);
    params.options = parsed;
    unknown.extend(refused.into_iter().map(|j| for_transport[j]));
    unknown.sort_unstable();
    params.unknown = unknown.into_iter().map(|i| tokens[i].to_owned()).collect();
    params
}

/// True when field 5 names the built-in provider (basename `libdat.so.1`, `libdat.so`, or exactly `builtin`).
pub fn is_builtin_library(library: &str) -> bool {
    let basename = library.rsplit('/').next().unwrap_or(library);
    library == "builtin" || basename == "libdat.so.1" || basename == "libdat.so"
}

#[cfg(test)]
mod tests;
