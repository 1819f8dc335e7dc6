//! Instance options: how a transport declares the `key=value` options of
//! its built-in dat.conf lines. Each option is declared once, in a table
//! the transport owns ([`OptionDecl`]): its name, default, help, parser and
//! printer; parsing dat.conf, the defaults and what an IA reports all come
//! from that declaration.
//!
//! Above the transports the options are opaque
//! ([`crate::transport::InstanceOptions`]): the registry hands a transport
//! the tokens it does not know itself ([`crate::transport::parse_options`])
//! and gets back a value that only that transport's `open` reads.

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
