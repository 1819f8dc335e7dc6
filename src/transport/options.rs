//! Instance options: how a transport declares the `key=value` options of
//! its built-in dat.conf lines. Each option is declared once, in a table
//! the transport owns ([`OptionDecl`]): its name, default, help, parser and
//! printer; parsing dat.conf, the defaults and what an IA reports all come
//! from that declaration.
//!
//! Above the transports the options are opaque ([`InstanceOptions`]): the
//! registry hands a transport the tokens it does not know itself
//! ([`crate::transport::parse_options`]) and gets back a value that only
//! that transport's `open` reads.

use super::tcp::options as tcp_options;
use super::TransportKind;

/// One instance option of a transport whose options are a `T`.
pub struct OptionDecl<T> {
    /// The key, as dat.conf spells it (`key=value`).
    pub name: &'static str,
    /// The value when the option is not given, as dat.conf spells it.
    pub default: &'static str,
    /// What it does, one line.
    pub help: &'static str,
    /// Sets the option from `value`; false (and `o` unchanged) if the value
    /// is malformed or out of range.
    pub parse: fn(value: &str, o: &mut T) -> bool,
    /// The option's value, as dat.conf spells it.
    pub print: fn(o: &T) -> String,
}

/// `T` with every option of `table` at its default (`base` holds what the
/// table does not set).
pub fn defaults<T>(table: &[OptionDecl<T>], mut base: T) -> T {
    for d in table {
        let ok = (d.parse)(d.default, &mut base);
        debug_assert!(ok, "default of option {} does not parse", d.name);
    }
    base
}

/// Parses `key=value` tokens into `o` with `table`; returns the indices (in
/// `tokens`) of those not understood (unknown key, malformed value), which
/// change nothing. A later token overrides an earlier one.
pub fn parse_tokens<T>(table: &[OptionDecl<T>], tokens: &[&str], o: &mut T) -> Vec<usize> {
    let mut unknown = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let understood = token.split_once('=').is_some_and(|(key, value)| {
            table
                .iter()
                .find(|d| d.name == key)
                .is_some_and(|d| (d.parse)(value, o))
        });
        if !understood {
            unknown.push(i);
        }
    }
    unknown
}

/// Every option of `table` with its value in `o`, in table order.
pub fn values<T>(table: &[OptionDecl<T>], o: &T) -> Vec<(&'static str, String)> {
    table.iter().map(|d| (d.name, (d.print)(o))).collect()
}

/// A transport's instance options, parsed by its own table; opaque above
/// the transports. The default is the default transport's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceOptions(pub(super) Parsed);

/// The options of each transport of this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    Tcp(tcp_options::DeviceOptions),
    /// A transport with no options (or not in this build).
    None,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions::defaults(TransportKind::default())
    }
}

impl InstanceOptions {
    /// Every option of `kind` at its default.
    pub fn defaults(kind: TransportKind) -> InstanceOptions {
        match kind {
            TransportKind::Tcp => {
                InstanceOptions(Parsed::Tcp(tcp_options::DeviceOptions::default()))
            }
            TransportKind::Shm | TransportKind::Verbs => InstanceOptions(Parsed::None),
        }
    }

    /// Every option with its value, by name, as dat.conf spells them (what
    /// an IA reports among its provider-specific attributes).
    pub fn values(&self) -> Vec<(&'static str, String)> {
        match &self.0 {
            Parsed::Tcp(o) => values(&tcp_options::OPTIONS, o),
            Parsed::None => Vec::new(),
        }
    }

    /// Every option the transport declares: name, default and help.
    pub fn declared(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        match &self.0 {
            Parsed::Tcp(_) => tcp_options::OPTIONS
                .iter()
                .map(|d| (d.name, d.default, d.help))
                .collect(),
            Parsed::None => Vec::new(),
        }
    }
}

/// Parses a transport's instance options from `tokens` (`key=value`, in
/// dat.conf order) with that transport's table. Returns the options and
/// the indices of the tokens not understood; a transport without options
/// (or not in this build) understands none.
pub fn parse(kind: TransportKind, tokens: &[&str]) -> (InstanceOptions, Vec<usize>) {
    let mut o = InstanceOptions::defaults(kind);
    let unknown = match &mut o.0 {
        Parsed::Tcp(t) => parse_tokens(&tcp_options::OPTIONS, tokens, t),
        Parsed::None => (0..tokens.len()).collect(),
    };
    (o, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_and_print_back() {
        let o = InstanceOptions::default();
        let shown: Vec<_> = o.values();
        let declared: Vec<_> = o
            .declared()
            .into_iter()
            .map(|(n, d, _)| (n, d.to_string()))
            .collect();
        assert_eq!(shown, declared);
        assert!(!shown.is_empty());
    }

    #[test]
    fn a_transport_without_options_understands_none() {
        let (o, unknown) = parse(TransportKind::Shm, &["crc=on", "x=y"]);
        assert_eq!(unknown, [0, 1]);
        assert!(o.values().is_empty());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_reported_by_index() {
        let (o, unknown) = parse(
            TransportKind::Tcp,
            &["crc=on", "colour=red", "crc=maybe", "bare"],
        );
        assert_eq!(unknown, [1, 2, 3]);
        assert!(o.values().contains(&("crc", "on".to_string())));
    }
}
