//! `dat-info`: what a libdat.so.1 offers, like `ibv_devinfo` / `fi_info`.
//!
//! Lists every registry entry (`dat_registry_list_providers`) with the
//! dat.conf file and line it comes from (or "built-in"), checks that its
//! provider library loads, opens each IA (`dat_ia_openv` with the entry's
//! version and thread safety), prints every `DAT_IA_ATTR` and
//! `DAT_PROVIDER_ATTR` field from `dat_ia_query`, and closes it. Only the
//! C ABI of the library is used, so any libdat.so.1 can be examined.
//!
//! Output formats, the JSON field names (stable), the stderr lines and the
//! exit codes are documented in `dat-info --help` (`AFTER_LONG_HELP`).

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use serde::Serialize;

use dat_abi::*;
use dat_tools::conf::{self, Location, Problem, Severity};
use dat_tools::fmt;
use dat_tools::ia::{self, IaAttr, Key, NamedAttr, OpenIa, ProviderAttr};
use dat_tools::sys::{self, Dat};

/// Every entry listed opened (or, with --list, was listed).
const EXIT_OK: u8 = 0;
/// An entry's provider library did not load, an IA did not open (or query
/// or close), or an IA named with -d is not in the registry.
const EXIT_ENTRY: u8 = 1;
/// dat.conf cannot be read or has malformed lines.
const EXIT_CONF: u8 = 3;
/// libdat itself cannot be loaded, or its registry cannot be listed.
const EXIT_LIB: u8 = 4;

/// `-h`: the exit codes.
const AFTER_HELP: &str = "\
Exit status: 0 all shown IAs opened, 1 a provider or IA failed (or -d names no
IA), 2 usage, 3 dat.conf unreadable or malformed, 4 libdat not loadable.
--help says more (output, JSON fields, environment).";

/// `--help`: everything.
const AFTER_LONG_HELP: &str = "\
Registry entries come from dat_registry_list_providers; the file and line of each
come from reading the dat.conf the library reads: $DAT_OVERRIDE if set, else
/etc/dat/dat.conf, else /etc/dat.conf. Entries in no file are built-in. A
provider library named in dat.conf is loaded (dlopen, RTLD_NOW) to check it;
every IA is opened (dat_ia_openv with the entry's DAT version and thread
safety), queried (dat_ia_query, every attribute) and closed.

Built-in IAs: tcp0, one OpenIB-<device>-<port> per active RDMA port whose network
interface has an address (verbs; the ports are read from sysfs, $DAT_VERBS_SYSFS
or /sys), one per network interface. A dat.conf line naming one of OFED's
libraries (libdapl*, e.g. libdaplcma.so.1) that does not load but whose IA the
library serves itself is shown with provider built-in.

Output: a summary table, then each IA: where its entry comes from, its provider,
transport and options (built-in provider: as the open IA reports them in its
provider_specific_attr; for a verbs IA these include the device's attributes:
device, port, link_layer, netdev, fw_ver, node_guid ...), status, address, and
every DAT_IA_ATTR and DAT_PROVIDER_ATTR field by its C name. An IA whose attributes equal an earlier one's (thread
safety aside) refers to it instead of repeating them, unless -v is given; -v
also prints the named attributes as name=value.

Problems go to stderr, one line each: 'dat-info: FILE:LINE: <what>' for dat.conf
(a malformed line; 'warning:' for a line that is used, or ignored by the library,
but looks wrong), 'dat-info: IA (uMAJ.MIN threadsafe|nonthreadsafe): <what>' for
an entry (the loader's message, or the dat_strerror text and the hex code).

Exit status (the highest that applies):
  0  every IA shown opened (with --list: every name was found)
  1  a provider library did not load, an IA did not open, query or close,
     or an IA named with -d is not in the registry
  2  usage error
  3  dat.conf cannot be read or has a malformed line (the rest is still shown)
  4  libdat cannot be loaded (or its registry cannot be listed)

JSON (--json): one object; with --list, an array of IA names.
  library                 what was loaded (--lib, $DAT_LIBRARY or libdat.so.1)
  library_file            the file the loader found for it (null: unknown)
  dat_conf                {path, from: \"DAT_OVERRIDE\"|\"default\"|null, readable,
                          error, problems: [{line, severity: \"error\"|\"warning\", message}]}
  entries[]               one per registry entry shown:
    ia_name, dapl_version_major, dapl_version_minor, is_thread_safe
                          the registry key
    source                \"built-in\" | \"dat.conf\" | \"unlisted\" (-d name not listed
                          but opened)
    file, line            where the dat.conf entry is (null: built-in)
    library, provider_version, instance_data, platform_data
                          dat.conf fields 5-8 (null: built-in)
    provider              \"built-in\" | \"library\" | \"unknown\" (unlisted);
                          \"built-in\" also for an OFED line the library serves
                          itself because OFED's library does not load
    provider_loads, provider_error, has_dat_provider_init
                          the dlopen check of a library (null: built-in
                          from the start)
    transport, options    built-in provider: the transport the IA reports
                          (provider_specific_attr 'transport'; for an IA that
                          did not open, the transport= its instance data asks
                          for, if any) and {name: value} of the other
                          provider_specific_attr but address (its options; for
                          a verbs IA also the device's attributes) (null: a
                          library's own)
    unavailable           why the IA did not open: the DAT error name, after
                          'transport=NAME: ' if the instance data asks for one;
                          null if it opened
    opened                whether dat_ia_openv succeeded
    error, error_code     dat_strerror text and \"0x........\" of what failed
    address, address_family
                          the IA address (\"127.0.0.1\", \"inet\"|\"inet6\")
    ia_attr               every DAT_IA_ATTR field by its C name; ia_address_ptr
                          is {family, address, port}; transport_attr and
                          vendor_attr are [{name, value}]
    provider_attr         every DAT_PROVIDER_ATTR field by its C name;
                          provider_specific_attr is [{name, value}],
                          evd_stream_merging_supported a 6x6 array of booleans
  errors[]                the lines printed on stderr
  exit_code               the exit status
DAT_BOOLEAN fields are JSON booleans; other values are the numbers returned.

Environment:
  DAT_LIBRARY   the libdat to load when --lib is not given (default libdat.so.1:
                the one installed beside dat-info in PREFIX/lib, else the usual
                search)
  DAT_OVERRIDE  the dat.conf to read (as the library does)
  DAT_VERBS_SYSFS
                the sysfs root the library reads RDMA ports from (default /sys)
  DAT_LOG       the library's own logging; dat-info sets it to 'error' unless it
                or DAT_DBG_TYPE is set, since it reports dat.conf problems itself

Examples:
  dat-info                     every IA, its address and attributes
  dat-info -l                  IA names only
  dat-info -d tcp0 -v          one IA, in full, with its named attributes
  dat-info --json | jq -r '.entries[] | \"\\(.ia_name) \\(.address)\"'
  DAT_OVERRIDE=./dat.conf dat-info --lib build/lib/libdat.so.1";

/// List the registry and IAs of a uDAPL (DAT 1.2) library.
#[derive(Parser, Debug)]
#[command(
    name = "dat-info",
    version,
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP
)]
struct Args {
    /// Show only this IA (by name; repeat for more)
    #[arg(short = 'd', long = "device", value_name = "IA_NAME")]
    device: Vec<String>,

    /// Print the IA names only, one per line (nothing is opened)
    #[arg(short, long)]
    list: bool,

    /// Also print the named attributes (provider_specific_attr, transport_attr,
    /// vendor_attr) as name=value, and every attribute table in full
    #[arg(short, long)]
    verbose: bool,

    /// Print JSON instead of tables
    #[arg(long)]
    json: bool,

    /// The libdat.so.1 to load [default: $DAT_LIBRARY, else libdat.so.1]
    #[arg(long, value_name = "PATH")]
    lib: Option<String>,
}

/// What dat.conf gave.
#[derive(Serialize, Debug)]
struct ConfReport {
    path: Option<String>,
    from: Option<&'static str>,
    readable: bool,
    error: Option<String>,
    problems: Vec<Problem>,
    #[serde(skip)]
    entries: Vec<conf::Entry>,
}

/// One registry entry and what became of it.
#[derive(Serialize, Debug)]
struct EntryReport {
    ia_name: String,
    dapl_version_major: u32,
    dapl_version_minor: u32,
    is_thread_safe: bool,
    source: &'static str,
    file: Option<String>,
    line: Option<usize>,
    library: Option<String>,
    provider_version: Option<String>,
    instance_data: Option<String>,
    platform_data: Option<String>,
    provider: &'static str,
    provider_loads: Option<bool>,
    provider_error: Option<String>,
    has_dat_provider_init: Option<bool>,
    transport: Option<String>,
    /// Why the IA did not open.
    unavailable: Option<String>,
    options: Option<Options>,
    opened: bool,
    error: Option<String>,
    error_code: Option<String>,
    address: Option<String>,
    address_family: Option<String>,
    ia_attr: Option<IaAttr>,
    provider_attr: Option<ProviderAttr>,
    /// Whether everything about this entry worked.
    #[serde(skip)]
    ok: bool,
}

#[derive(Serialize, Debug)]
struct Report {
    library: String,
    library_file: Option<String>,
    dat_conf: ConfReport,
    entries: Vec<EntryReport>,
    errors: Vec<String>,
    exit_code: u8,
}

/// The built-in provider's options as an open IA reports them: its
/// provider-specific attributes but the transport and the address, in the
/// library's order (a JSON object).
#[derive(Debug)]
struct Options(Vec<NamedAttr>);

impl Options {
    /// The transport and the options in `attrs` (`provider_specific_attr`).
    fn of(attrs: &[NamedAttr]) -> (Option<String>, Options) {
        let transport = attrs.iter().find(|a| a.name == "transport");
        let options = attrs
            .iter()
            .filter(|a| a.name != "transport" && a.name != "address")
            .cloned()
            .collect();
        (transport.map(|a| a.value.clone()), Options(options))
    }

    /// `name=value` pairs separated by blanks.
    fn to_conf_syntax(&self) -> String {
        let pairs: Vec<String> = self
            .0
            .iter()
            .map(|a| format!("{}={}", a.name, a.value))
            .collect();
        pairs.join(" ")
    }
}

impl Serialize for Options {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for a in &self.0 {
            map.serialize_entry(&a.name, &a.value)?;
        }
        map.end()
    }
}

/// Collects the stderr lines and the exit status.
struct Errors {
    lines: Vec<String>,
    status: u8,
}

impl Errors {
    fn report(&mut self, status: u8, what: String) {
        let line = format!("dat-info: {what}");
        eprintln!("{line}");
        self.lines.push(line);
        self.status = self.status.max(status);
    }
}

/// OFED's uDAPL provider libraries (`libdaplcma.so.1`, `libdaplofa.so.2`,
/// `libdaploscm.so.2`, ...): basename `libdapl*`.
fn is_ofed_library(library: &str) -> bool {
    let basename = library.rsplit('/').next().unwrap_or(library);
    basename.starts_with("libdapl") && basename.contains(".so")
}

/// `name (u1.2 nonthreadsafe)`: a registry key in dat.conf notation.
fn label(k: &Key) -> String {
    format!(
        "{} (u{}.{} {})",
        k.name(),
        k.major,
        k.minor,
        if k.thread_safe {
            "threadsafe"
        } else {
            "nonthreadsafe"
        }
    )
}

/// `DAT_PROVIDER_NOT_FOUND: ... (0x800a0000)`.
fn dat_error(dat: &Dat, rc: DAT_RETURN) -> String {
    format!("{} ({rc:#010x})", dat.strerror(rc))
}

/// An I/O error without Rust's "(os error N)" suffix.
fn io_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reads the dat.conf the library reads.
fn read_conf(errors: &mut Errors) -> ConfReport {
    let loc = conf::locate();
    let from = match loc {
        Location::Override(_) => Some("DAT_OVERRIDE"),
        Location::Default(_) => Some("default"),
        Location::Absent => None,
    };
    let mut r = ConfReport {
        path: loc.path().map(|p| p.display().to_string()),
        from,
        readable: false,
        error: None,
        problems: Vec::new(),
        entries: Vec::new(),
    };
    let Some(path) = loc.path() else {
        return r;
    };
    match std::fs::read(path) {
        Ok(text) => {
            let (entries, problems) = conf::parse(&text);
            r.readable = true;
            r.entries = entries;
            r.problems = problems;
        }
        Err(e) => {
            let shown = if path.as_os_str().is_empty() {
                "DAT_OVERRIDE=''".to_string()
            } else {
                path.display().to_string()
            };
            let why = io_text(&e);
            errors.report(EXIT_CONF, format!("{shown}: cannot read dat.conf: {why}"));
            r.error = Some(why);
        }
    }
    r
}

/// Which dat.conf entry each registry key comes from (index into the
/// entries), and the problems of entries the library does not list.
fn match_entries(keys: &[Key], conf: &mut ConfReport) -> Vec<Option<usize>> {
    let same = |k: &Key, e: &conf::Entry| {
        k.name == e.ia_name
            && k.major == e.api_major
            && k.minor == e.api_minor
            && k.thread_safe == e.thread_safe
    };
    let mut used = vec![false; conf.entries.len()];
    let found: Vec<Option<usize>> = keys
        .iter()
        .map(|k| {
            let i = conf.entries.iter().position(|e| same(k, e))?;
            used[i] = true;
            Some(i)
        })
        .collect();
    for (i, e) in conf.entries.iter().enumerate() {
        let key = Key {
            name: e.ia_name.clone(),
            major: e.api_major,
            minor: e.api_minor,
            thread_safe: e.thread_safe,
        };
        if used[i] {
            continue;
        }
        let message = match conf.entries[..i].iter().find(|f| same(&key, f)) {
            Some(first) => format!(
                "{} repeats line {}: ignored (the first one wins)",
                label(&key),
                first.line
            ),
            None => {
                let hint = if conf::is_builtin_library(&e.library)
                    && !(e.api_major == 1 && e.api_minor <= 2)
                {
                    " (the built-in provider implements DAT 1.2)"
                } else {
                    ""
                };
                format!(
                    "{} is not in the library's registry: ignored{hint}",
                    label(&key)
                )
            }
        };
        conf.problems.push(warning(e.line, message));
    }
    conf.problems.sort_by_key(|p| p.line);
    found
}

fn warning(line: usize, message: String) -> Problem {
    Problem {
        line,
        severity: Severity::Warning,
        message,
    }
}

/// Examines one registry entry: its provider library (if it names one),
/// then the IA. `unlisted`: a -d name the registry does not list but that
/// opens (a provider registered it at run time).
fn inspect(
    dat: &Dat,
    key: &Key,
    source: Option<(&conf::Entry, &Path)>,
    unlisted: bool,
    errors: &mut Errors,
) -> EntryReport {
    let name = key.name();
    let mut builtin = !unlisted && source.is_none_or(|(e, _)| conf::is_builtin_library(&e.library));
    let mut r = EntryReport {
        ia_name: name,
        dapl_version_major: key.major,
        dapl_version_minor: key.minor,
        is_thread_safe: key.thread_safe,
        source: match (source, unlisted) {
            (Some(_), _) => "dat.conf",
            (None, true) => "unlisted",
            (None, false) => "built-in",
        },
        file: source.map(|(_, p)| p.display().to_string()),
        line: source.map(|(e, _)| e.line),
        library: source.map(|(e, _)| e.library.clone()),
        provider_version: source.map(|(e, _)| e.provider_version.clone()),
        instance_data: source.map(|(e, _)| e.instance_data.clone()),
        platform_data: source.map(|(e, _)| e.platform_data.clone()),
        provider: match (builtin, unlisted) {
            (true, _) => "built-in",
            (false, false) => "library",
            (false, true) => "unknown",
        },
        provider_loads: None,
        provider_error: None,
        has_dat_provider_init: None,
        transport: None,
        unavailable: None,
        options: None,
        opened: false,
        error: None,
        error_code: None,
        address: None,
        address_family: None,
        ia_attr: None,
        provider_attr: None,
        ok: false,
    };
    if let (false, Some((e, _))) = (builtin, source) {
        let probe = ia::probe_library(&e.library);
        r.provider_loads = Some(probe.loads);
        r.has_dat_provider_init = Some(probe.has_dat_provider_init);
        if let Some(why) = probe.error {
            // A libdat may serve an OFED line itself when OFED's library
            // is not there: then the IA is in its registry (it opens, or
            // fails for another reason than not being found).
            let served = is_ofed_library(&e.library)
                && OpenIa::open(dat, key)
                    .map_or_else(|rc| rc & DAT_TYPE_MASK != DAT_PROVIDER_NOT_FOUND, |_| true);
            if served {
                builtin = true;
                r.provider = "built-in";
                r.provider_error = Some(why);
            } else {
                errors.report(
                    EXIT_ENTRY,
                    format!(
                        "{}: provider library {} cannot be loaded: {why}",
                        label(key),
                        e.library
                    ),
                );
                r.provider_error = Some(why);
                r.error = Some("provider library not loaded".into());
                return r;
            }
        }
    }
    let requested = source
        .filter(|_| builtin)
        .and_then(|(e, _)| conf::requested_transport(&e.instance_data));
    let ia = match OpenIa::open(dat, key) {
        Ok(ia) => ia,
        Err(rc) => {
            // The built-in provider's usual reasons: a transport the
            // library does not have, a network interface it cannot use.
            let no_device = rc & DAT_TYPE_MASK == DAT_INSUFFICIENT_RESOURCES
                && rc & DAT_SUBTYPE_MASK == DAT_RESOURCE_DEVICE;
            // The built-in RDMA port IAs are named as OFED names them.
            let rdma_port = builtin && source.is_none() && r.ia_name.starts_with("OpenIB-");
            let hint = match requested {
                Some(t) => format!(" (its instance data asks for transport={t})"),
                None if rdma_port => " (an RDMA port: it needs rdma-core's libibverbs.so.1 and \
                     librdmacm.so.1; DAT_LOG=warn says why)"
                    .to_string(),
                None if builtin && no_device => {
                    " (is its network interface there, with an address?)".to_string()
                }
                None => String::new(),
            };
            errors.report(
                EXIT_ENTRY,
                format!("{}: cannot open: {}{hint}", label(key), dat_error(dat, rc)),
            );
            let error = dat.strerror(rc);
            r.transport = requested.map(str::to_string);
            r.unavailable = Some(match requested {
                Some(t) => format!("transport={t}: {error}"),
                None => error.clone(),
            });
            r.error = Some(error);
            r.error_code = Some(format!("{rc:#010x}"));
            return r;
        }
    };
    r.opened = true;
    let mut ok = true;
    match ia.query() {
        Ok((a, p)) => {
            if let Some(addr) = &a.ia_address_ptr {
                r.address = (!addr.address.is_empty()).then(|| addr.address.clone());
                r.address_family = Some(addr.family.clone());
            }
            if builtin {
                let (transport, options) = Options::of(&p.provider_specific_attr);
                r.transport = transport;
                r.options = Some(options);
            }
            r.ia_attr = Some(a);
            r.provider_attr = Some(p);
        }
        Err(rc) => {
            ok = false;
            errors.report(
                EXIT_ENTRY,
                format!(
                    "{}: dat_ia_query failed: {}",
                    label(key),
                    dat_error(dat, rc)
                ),
            );
            r.error = Some(dat.strerror(rc));
            r.error_code = Some(format!("{rc:#010x}"));
        }
    }
    if let Err(rc) = ia.close() {
        ok = false;
        errors.report(
            EXIT_ENTRY,
            format!(
                "{}: dat_ia_close failed: {}",
                label(key),
                dat_error(dat, rc)
            ),
        );
        if r.error.is_none() {
            r.error = Some(dat.strerror(rc));
            r.error_code = Some(format!("{rc:#010x}"));
        }
    }
    r.ok = ok;
    r
}

/// The human-readable report.
fn render(report: &Report, verbose: bool) -> String {
    let mut out = String::new();
    match &report.library_file {
        Some(f) if *f != report.library => {
            out.push_str(&format!("libdat:   {f} ({})\n", report.library));
        }
        _ => out.push_str(&format!("libdat:   {}\n", report.library)),
    }
    let c = &report.dat_conf;
    let conf_line = match (&c.path, c.from, c.readable) {
        (None, _, _) => format!(
            "none ({} and {} do not exist; built-in IAs only)",
            conf::DEFAULT_PATHS[0],
            conf::DEFAULT_PATHS[1]
        ),
        (Some(p), from, true) => format!(
            "{p}{}, {} entr{}",
            if from == Some("DAT_OVERRIDE") {
                " ($DAT_OVERRIDE)"
            } else {
                ""
            },
            c.entries.len(),
            if c.entries.len() == 1 { "y" } else { "ies" }
        ),
        (Some(p), _, false) => format!(
            "{p}: cannot be read ({})",
            c.error.as_deref().unwrap_or("?")
        ),
    };
    out.push_str(&format!("dat.conf: {conf_line}\n"));
    if report.entries.is_empty() {
        out.push_str("\nno IA to show\n");
        return out;
    }
    let body: Vec<Vec<String>> = report
        .entries
        .iter()
        .map(|e| {
            vec![
                e.ia_name.clone(),
                format!("{}.{}", e.dapl_version_major, e.dapl_version_minor),
                if e.is_thread_safe { "yes" } else { "no" }.into(),
                from_text(e),
                provider_short(e),
                status_text(e),
                e.address.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&fmt::table(
        &[
            "IA",
            "DAT",
            "THREADSAFE",
            "FROM",
            "PROVIDER",
            "STATUS",
            "ADDRESS",
        ],
        &body,
    ));
    for (i, e) in report.entries.iter().enumerate() {
        out.push('\n');
        out.push_str(&details(e, &report.entries[..i], verbose));
    }
    out
}

fn from_text(e: &EntryReport) -> String {
    match (&e.file, e.line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => e.source.to_string(),
    }
}

fn provider_short(e: &EntryReport) -> String {
    match (&e.library, e.provider) {
        (Some(lib), "library") => lib.clone(),
        (_, other) => other.into(),
    }
}

fn status_text(e: &EntryReport) -> String {
    if e.provider == "library" && e.provider_loads == Some(false) {
        "not loaded".into()
    } else if !e.opened {
        "unavailable".into()
    } else if e.ok {
        "ok".into()
    } else {
        "failed".into()
    }
}

/// Width of the attribute names column (the longest DAT_IA_ATTR name).
const ATTR_WIDTH: usize = "max_rdma_read_per_ep_out_guaranteed".len();

/// The earlier entry whose attributes `e` repeats, thread safety aside:
/// (its label, whether is_thread_safe differs).
fn repeats(e: &EntryReport, before: &[EntryReport]) -> Option<(String, bool)> {
    let (a, p) = (e.ia_attr.as_ref()?, e.provider_attr.as_ref()?);
    before.iter().find_map(|b| {
        let (ba, bp) = (b.ia_attr.as_ref()?, b.provider_attr.as_ref()?);
        let mut same_ts = bp.clone();
        same_ts.is_thread_safe = p.is_thread_safe;
        (ba == a && same_ts == *p).then(|| (entry_label(b), bp.is_thread_safe != p.is_thread_safe))
    })
}

fn entry_label(e: &EntryReport) -> String {
    format!(
        "{} (u{}.{} {})",
        e.ia_name,
        e.dapl_version_major,
        e.dapl_version_minor,
        if e.is_thread_safe {
            "threadsafe"
        } else {
            "nonthreadsafe"
        }
    )
}

/// One entry in full; `before` are the entries already shown (without -v
/// attributes equal to one of theirs are not repeated).
fn details(e: &EntryReport, before: &[EntryReport], verbose: bool) -> String {
    let mut head: Vec<(&str, String)> = vec![("from", from_text(e))];
    if let Some(lib) = &e.library {
        head.push(("library", lib.clone()));
    }
    let provider = match (e.provider, e.provider_loads, &e.provider_error) {
        ("built-in", Some(false), Some(why)) => {
            format!("built-in (served by libdat itself: OFED's library does not load: {why})")
        }
        ("built-in", _, _) => "built-in (served by libdat itself)".to_string(),
        ("unknown", _, _) => "registered at run time (not listed)".to_string(),
        (_, Some(true), _) => format!(
            "loads{}",
            if e.has_dat_provider_init == Some(true) {
                ", exports dat_provider_init"
            } else {
                ", no dat_provider_init (it must register itself)"
            }
        ),
        (_, _, Some(why)) => format!("does not load: {why}"),
        _ => "-".into(),
    };
    head.push(("provider", provider));
    if let Some(v) = &e.provider_version {
        head.push(("provider_version", v.clone()));
    }
    if let Some(d) = &e.instance_data {
        head.push(("instance_data", format!("{d:?}")));
    }
    if let Some(d) = &e.platform_data {
        head.push(("platform_data", format!("{d:?}")));
    }
    let transport = match (&e.transport, e.provider) {
        (Some(t), _) => t.clone(),
        (None, "built-in") => "not reported (the IA did not open)".into(),
        _ => "the provider's".into(),
    };
    head.push(("transport", transport));
    if let Some(o) = &e.options {
        head.push(("options", o.to_conf_syntax()));
    }
    let status = match (&e.error, &e.error_code, &e.unavailable) {
        (_, Some(code), Some(why)) => format!("{}: {why} ({code})", status_text(e)),
        (Some(err), Some(code), None) => format!("{} ({err}, {code})", status_text(e)),
        _ => status_text(e),
    };
    head.push(("status", status));
    if let Some(a) = &e.address {
        head.push((
            "address",
            format!("{a} ({})", e.address_family.as_deref().unwrap_or("?")),
        ));
    }
    let mut out = format!("{}\n", entry_label(e));
    let repeated = if verbose { None } else { repeats(e, before) };
    if let Some((first, ts_differs)) = repeated {
        head.push((
            "attributes",
            format!(
                "as {first} above{}",
                if ts_differs {
                    format!(", but is_thread_safe {}", fmt::boolean(e.is_thread_safe))
                } else {
                    String::new()
                }
            ),
        ));
        out.push_str(&fmt::rows(&head, 4, 0));
        return out;
    }
    out.push_str(&fmt::rows(&head, 4, 0));
    if let Some(a) = &e.ia_attr {
        out.push_str("  DAT_IA_ATTR\n");
        out.push_str(&fmt::rows(&fmt::ia_rows(a), 4, ATTR_WIDTH));
    }
    if let Some(p) = &e.provider_attr {
        out.push_str("  DAT_PROVIDER_ATTR\n");
        out.push_str(&fmt::rows(&fmt::provider_rows(p), 4, ATTR_WIDTH));
    }
    if verbose {
        if let (Some(a), Some(p)) = (&e.ia_attr, &e.provider_attr) {
            out.push_str("  named attributes\n");
            let lists: Vec<(&str, String)> = vec![
                (
                    "provider_specific_attr",
                    fmt::named_lines(&p.provider_specific_attr).join("\n"),
                ),
                (
                    "transport_attr",
                    fmt::named_lines(&a.transport_attr).join("\n"),
                ),
                ("vendor_attr", fmt::named_lines(&a.vendor_attr).join("\n")),
            ];
            out.push_str(&fmt::rows(&lists, 4, ATTR_WIDTH));
        }
    }
    out
}

/// Writes to stdout; a closed pipe (`dat-info | head`) is not an error.
fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

fn main() -> ExitCode {
    let args = Args::parse();
    if std::env::var_os("DAT_LOG").is_none() && std::env::var_os("DAT_DBG_TYPE").is_none() {
        // Before the library is loaded and before any thread exists: the
        // library's own dat.conf warnings would repeat ours.
        std::env::set_var("DAT_LOG", "error");
    }
    let mut errors = Errors {
        lines: Vec::new(),
        status: EXIT_OK,
    };
    let library = args.lib.clone().unwrap_or_else(sys::default_library);
    let dat = match Dat::load(&library) {
        Ok(d) => d,
        Err(e) => {
            errors.report(EXIT_LIB, e.to_string());
            return ExitCode::from(EXIT_LIB);
        }
    };
    let mut conf = read_conf(&mut errors);
    let keys = match ia::list_providers(&dat) {
        Ok(k) => k,
        Err(rc) => {
            errors.report(
                EXIT_LIB,
                format!(
                    "{library}: dat_registry_list_providers failed: {}",
                    dat_error(&dat, rc)
                ),
            );
            return ExitCode::from(EXIT_LIB);
        }
    };
    let origin = match_entries(&keys, &mut conf);
    if let Some(path) = &conf.path {
        for p in &conf.problems {
            let status = if p.severity == Severity::Error {
                EXIT_CONF
            } else {
                EXIT_OK
            };
            errors.report(status, format!("{path}:{}: {p}", p.line));
        }
    }
    let wanted = |k: &Key| args.device.is_empty() || args.device.iter().any(|d| *d == k.name());
    let listed: HashSet<String> = keys.iter().map(Key::name).collect();
    let missing: Vec<&String> = {
        let mut seen = HashSet::new();
        args.device
            .iter()
            .filter(|d| !listed.contains(*d) && seen.insert(*d))
            .collect()
    };

    if args.list {
        let mut names: Vec<String> = Vec::new();
        for k in keys.iter().filter(|k| wanted(k)) {
            if !names.contains(&k.name()) {
                names.push(k.name());
            }
        }
        for d in &missing {
            errors.report(EXIT_ENTRY, format!("{d}: no such IA in the registry"));
        }
        if args.json {
            let mut text = serde_json::to_string_pretty(&names).unwrap_or_default();
            text.push('\n');
            emit(&text);
        } else {
            emit(&names.iter().map(|n| format!("{n}\n")).collect::<String>());
        }
        return ExitCode::from(errors.status);
    }

    let conf_path = conf.path.clone().map(std::path::PathBuf::from);
    let mut entries = Vec::new();
    for (k, origin) in keys.iter().zip(&origin) {
        if !wanted(k) {
            continue;
        }
        let source = origin.map(|i| &conf.entries[i]).zip(conf_path.as_deref());
        entries.push(inspect(&dat, k, source, false, &mut errors));
    }
    // A name that is not listed may still be registered by a provider at
    // run time (dat_registry_add_provider): try the dat_ia_open defaults.
    for d in missing {
        let key = Key {
            name: d.as_bytes().to_vec(),
            major: 1,
            minor: 2,
            thread_safe: false,
        };
        match OpenIa::open(&dat, &key) {
            Ok(ia) => {
                drop(ia);
                entries.push(inspect(&dat, &key, None, true, &mut errors));
            }
            Err(rc) if rc & DAT_TYPE_MASK == DAT_PROVIDER_NOT_FOUND => {
                errors.report(EXIT_ENTRY, format!("{d}: no such IA in the registry"));
            }
            Err(rc) => errors.report(
                EXIT_ENTRY,
                format!(
                    "{}: not listed in the registry, and cannot open: {}",
                    label(&key),
                    dat_error(&dat, rc)
                ),
            ),
        }
    }
    let status = errors.status;
    let report = Report {
        library: dat.path.clone(),
        library_file: ia::loaded_from(&dat)
            .map(|f| std::fs::canonicalize(&f).map_or(f, |p| p.display().to_string())),
        dat_conf: conf,
        entries,
        errors: errors.lines,
        exit_code: status,
    };
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(mut text) => {
                text.push('\n');
                emit(&text);
            }
            Err(e) => {
                eprintln!("dat-info: cannot write JSON: {e}");
                return ExitCode::from(EXIT_ENTRY);
            }
        }
    } else {
        emit(&render(&report, args.verbose));
    }
    ExitCode::from(status)
}
