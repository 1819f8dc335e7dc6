//! The provider registry.
//!
//! - The static registry (SR) is read once from dat.conf: `DAT_OVERRIDE`,
//!   else `/etc/dat/dat.conf`, else `/etc/dat.conf`. It is what
//!   `dat_registry_list_providers` lists, followed by the built-in IAs.
//! - The dynamic registry (DR) holds what can be opened: the built-in IAs,
//!   dat.conf lines that name the built-in provider, and whatever providers
//!   register with `dat_registry_add_provider` (typically from their
//!   `dat_provider_init`, called when their dat.conf line is first opened).
//!
//! Keys are (IA name, major, minor, thread safety); entries are unique per
//! full key. An open matches name, major and thread safety exactly and any
//! entry minor ≥ the requested one, preferring the exact minor (rulings D21).
//!
//! Every successful [`Registry::begin_open`] returns a [`Ticket`] naming the
//! entries whose counts it raised; [`Registry::release`] undoes exactly
//! that, on close or when the provider's open fails (rulings D24). An
//! external library is unloaded (after its `dat_provider_fini`) when its
//! count drops to zero; DR entries it added are removed with it, so no entry
//! ever points into an unloaded library.

pub mod conf;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{DatError, Result, Type};
use crate::transport::{DeviceConfig, TransportKind};

pub use conf::{BuiltinParams, ConfEntry, ConfWarning};

/// A registry key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProviderKey {
    pub name: Vec<u8>,
    pub major: u32,
    pub minor: u32,
    pub thread_safe: bool,
}

/// The name of the built-in IA every process can open.
pub const BUILTIN_IA_NAME: &str = "tcp0";

/// How a DR entry opens an IA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opener {
    /// The built-in provider with this device configuration.
    Builtin(DeviceConfig),
    /// A provider's `ia_open_func` (address of a C function) and its
    /// `DAT_PROVIDER *`.
    External { open_fn: usize, provider: usize },
}

/// A loaded third-party provider library.
pub trait ExternalLibrary: Send {
    /// Calls the library's `dat_provider_init`, if it exports one.
    fn init(&self);
    /// Calls the library's `dat_provider_fini`, if it exports one.
    fn fini(&self);
}

/// Loads third-party provider libraries (`dlopen`); supplied by the C layer.
pub trait Loader: Send + Sync {
    /// Loads the library of `entry`. `None` if it cannot be loaded.
    fn load(&self, entry: &ConfEntry) -> Option<Box<dyn ExternalLibrary>>;
}

struct SrEntry {
    key: ProviderKey,
    conf: ConfEntry,
    builtin: bool,
    lib: Option<Box<dyn ExternalLibrary>>,
    count: usize,
}

struct DrEntry {
    key: ProviderKey,
    opener: Opener,
    count: usize,
    /// The SR entry whose library added this entry (it keeps the library loaded).
    owner: Option<usize>,
}

/// What an open took, to be given back by [`Registry::release`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ticket {
    dr_key: ProviderKey,
    sr_holds: Vec<usize>,
}

/// The registry.
pub struct Registry {
    sr: Mutex<Vec<SrEntry>>,
    dr: Mutex<Vec<DrEntry>>,
    builtin_keys: Vec<ProviderKey>,
    loader: Box<dyn Loader>,
}

thread_local! {
    /// The SR entry whose `dat_provider_init` is running on this thread.
    static INITIALIZING: Cell<Option<usize>> = const { Cell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The dat.conf path: `DAT_OVERRIDE` (even if it names a missing file), else
/// `/etc/dat/dat.conf`, else `/etc/dat.conf`.
pub fn conf_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DAT_OVERRIDE") {
        return Some(PathBuf::from(p));
    }
    ["/etc/dat/dat.conf", "/etc/dat.conf"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// The device configuration a built-in dat.conf line asks for.
pub fn builtin_device(params: &BuiltinParams) -> DeviceConfig {
    DeviceConfig {
        transport: params
            .transport
            .as_deref()
            .and_then(TransportKind::parse)
            .unwrap_or_default(),
        netdev: params.netdev.clone(),
        port: params.port.unwrap_or(1),
    }
}

impl Registry {
    /// Builds the registry from the dat.conf the environment names.
    pub fn from_environment(loader: Box<dyn Loader>) -> Registry {
        Self::with_conf(conf_path().as_deref(), loader)
    }

    /// Builds the registry from `path` (none: no dat.conf).
    pub fn with_conf(path: Option<&Path>, loader: Box<dyn Loader>) -> Registry {
        let builtin_keys: Vec<ProviderKey> = [false, true]
            .iter()
            .map(|&ts| ProviderKey {
                name: BUILTIN_IA_NAME.as_bytes().to_vec(),
                major: 1,
                minor: 2,
                thread_safe: ts,
            })
            .collect();
        let mut dr: Vec<DrEntry> = builtin_keys
            .iter()
            .map(|k| DrEntry {
                key: k.clone(),
                opener: Opener::Builtin(DeviceConfig::default()),
                count: 0,
                owner: None,
            })
            .collect();
        let mut sr: Vec<SrEntry> = Vec::new();
        if let Some(path) = path {
            let entries = match conf::parse_file(path) {
                Ok((entries, warnings)) => {
                    for w in warnings {
                        tracing::warn!(file = %path.display(), line = w.line, "dat.conf: {}", w.message);
                    }
                    entries
                }
                Err(e) => {
                    if std::env::var_os("DAT_OVERRIDE").is_some() {
                        tracing::warn!(file = %path.display(), error = %e, "cannot read dat.conf");
                    }
                    Vec::new()
                }
            };
            for entry in entries {
                let key = ProviderKey {
                    name: entry.ia_name.clone(),
                    major: entry.api_major,
                    minor: entry.api_minor,
                    thread_safe: entry.thread_safe,
                };
                if sr.iter().any(|e| e.key == key) {
                    tracing::warn!(file = %path.display(), line = entry.line,
                        "dat.conf: duplicate IA entry ignored (the first one wins)");
                    continue;
                }
                let builtin = conf::is_builtin_library(&entry.library);
                if builtin {
                    if key.major != 1 || key.minor > 2 {
                        tracing::warn!(file = %path.display(), line = entry.line,
                            "dat.conf: the built-in provider implements DAT 1.2; entry ignored");
                        continue;
                    }
                    let params = conf::parse_builtin_params(&entry.instance_data);
                    for u in &params.unknown {
                        tracing::warn!(file = %path.display(), line = entry.line,
                            "dat.conf: unknown built-in provider parameter '{u}'");
                    }
                    if !dr.iter().any(|d| d.key == key) {
                        dr.push(DrEntry {
                            key: key.clone(),
                            opener: Opener::Builtin(builtin_device(&params)),
                            count: 0,
                            owner: None,
                        });
                    }
                }
                sr.push(SrEntry {
                    key,
                    conf: entry,
                    builtin,
                    lib: None,
                    count: 0,
                });
            }
        }
        Registry {
            sr: Mutex::new(sr),
            dr: Mutex::new(dr),
            builtin_keys,
            loader,
        }
    }

    /// `dat_registry_list_providers`: dat.conf entries in file order, then
    /// the built-in IAs.
    pub fn list(&self) -> Vec<ProviderKey> {
        let sr = lock(&self.sr);
        sr.iter()
            .map(|e| e.key.clone())
            .chain(self.builtin_keys.iter().cloned())
            .collect()
    }

    /// `dat_registry_add_provider`.
    pub fn add_provider(&self, key: ProviderKey, opener: Opener) -> Result<()> {
        let mut dr = lock(&self.dr);
        if dr.iter().any(|e| e.key == key) {
            return Err(DatError::of(Type::ProviderAlreadyRegistered));
        }
        let owner = INITIALIZING.with(Cell::get);
        dr.push(DrEntry {
            key,
            opener,
            count: 0,
            owner,
        });
        Ok(())
    }

    /// `dat_registry_remove_provider`.
    pub fn remove_provider(&self, key: &ProviderKey) -> Result<()> {
        let mut dr = lock(&self.dr);
        let i = dr
            .iter()
            .position(|e| &e.key == key)
            .ok_or(DatError::arg(2))?;
        if dr[i].count > 0 {
            return Err(DatError::of(Type::ProviderInUse));
        }
        dr.remove(i);
        Ok(())
    }

    /// True if some DR entry has this `DAT_PROVIDER *` (used to accept
    /// foreign handles).
    pub fn knows_provider(&self, provider: usize) -> bool {
        lock(&self.dr)
            .iter()
            .any(|e| matches!(e.opener, Opener::External { provider: p, .. } if p == provider))
    }

    fn best<'a>(
        items: impl Iterator<Item = (usize, &'a ProviderKey)>,
        want: &ProviderKey,
    ) -> Option<usize> {
        let mut best: Option<(usize, u32)> = None;
        for (i, k) in items {
            if k.name == want.name
                && k.major == want.major
                && k.thread_safe == want.thread_safe
                && k.minor >= want.minor
                && best.is_none_or(|(_, m)| k.minor < m)
            {
                best = Some((i, k.minor));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Finds what opens `want`: loads its dat.conf library on first use
    /// (calling `dat_provider_init`), then looks the key up in the DR.
    pub fn begin_open(&self, want: &ProviderKey) -> Result<(Ticket, Opener)> {
        let mut sr = lock(&self.sr);
        let mut sr_holds = Vec::new();
        let sr_idx = Self::best(sr.iter().enumerate().map(|(i, e)| (i, &e.key)), want);
        if let Some(i) = sr_idx {
            let e = &mut sr[i];
            if !e.builtin {
                if e.count == 0 && e.lib.is_none() {
                    // Entries the library adds while it loads (ELF
                    // constructors) or in its init are owned by it.
                    INITIALIZING.with(|c| c.set(Some(i)));
                    if let Some(lib) = self.loader.load(&e.conf) {
                        lib.init();
                        e.lib = Some(lib);
                    }
                    INITIALIZING.with(|c| c.set(None));
                }
                if e.lib.is_some() {
                    e.count += 1;
                    sr_holds.push(i);
                }
            }
        }
        let found = {
            let mut dr = lock(&self.dr);
            match Self::best(dr.iter().enumerate().map(|(i, e)| (i, &e.key)), want) {
                Some(i) => {
                    dr[i].count += 1;
                    if let Some(o) = dr[i].owner {
                        if let Some(s) = sr.get_mut(o) {
                            s.count += 1;
                            sr_holds.push(o);
                        }
                    }
                    Some((dr[i].key.clone(), dr[i].opener.clone()))
                }
                None => None,
            }
        };
        match found {
            Some((dr_key, opener)) => Ok((Ticket { dr_key, sr_holds }, opener)),
            None => {
                let t = Ticket {
                    dr_key: want.clone(),
                    sr_holds,
                };
                self.release_sr(&mut sr, &t);
                Err(DatError::of(Type::ProviderNotFound))
            }
        }
    }

    /// Gives back what `begin_open` took (on close, or after a failed open).
    pub fn release(&self, ticket: &Ticket) {
        {
            let mut dr = lock(&self.dr);
            if let Some(e) = dr.iter_mut().find(|e| e.key == ticket.dr_key) {
                e.count = e.count.saturating_sub(1);
            }
        }
        let mut sr = lock(&self.sr);
        self.release_sr(&mut sr, ticket);
    }

    fn release_sr(&self, sr: &mut [SrEntry], ticket: &Ticket) {
        for &i in &ticket.sr_holds {
            let Some(e) = sr.get_mut(i) else { continue };
            e.count = e.count.saturating_sub(1);
            if e.count == 0 {
                if let Some(lib) = e.lib.take() {
                    lib.fini();
                    // Entries the library added must not outlive it.
                    lock(&self.dr).retain(|d| d.owner != Some(i) || d.count > 0);
                    drop(lib);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    struct NoLoader;
    impl Loader for NoLoader {
        fn load(&self, _: &ConfEntry) -> Option<Box<dyn ExternalLibrary>> {
            None
        }
    }

    fn key(name: &str, minor: u32, ts: bool) -> ProviderKey {
        ProviderKey {
            name: name.as_bytes().to_vec(),
            major: 1,
            minor,
            thread_safe: ts,
        }
    }

    #[test]
    fn builtins_are_listed_and_openable() {
        let r = Registry::with_conf(None, Box::new(NoLoader));
        assert_eq!(r.list(), vec![key("tcp0", 2, false), key("tcp0", 2, true)]);
        let (t, o) = r.begin_open(&key("tcp0", 2, false)).expect("open");
        assert_eq!(o, Opener::Builtin(DeviceConfig::default()));
        assert_eq!(
            r.remove_provider(&key("tcp0", 2, false)),
            Err(DatError::of(Type::ProviderInUse))
        );
        r.release(&t);
        assert_eq!(r.remove_provider(&key("tcp0", 2, false)), Ok(()));
        assert_eq!(
            r.remove_provider(&key("tcp0", 2, false)),
            Err(DatError::arg(2))
        );
    }

    #[test]
    fn minor_matching_prefers_exact_and_accepts_lower_request() {
        let r = Registry::with_conf(None, Box::new(NoLoader));
        assert!(r.begin_open(&key("tcp0", 1, false)).is_ok());
        assert!(r.begin_open(&key("tcp0", 3, false)).is_err());
        let mut k = key("tcp0", 2, false);
        k.major = 2;
        assert_eq!(
            r.begin_open(&k).map(|_| ()),
            Err(DatError::of(Type::ProviderNotFound))
        );
        r.add_provider(key("x", 1, false), Opener::Builtin(DeviceConfig::default()))
            .expect("add");
        r.add_provider(key("x", 2, false), Opener::Builtin(DeviceConfig::default()))
            .expect("add");
        let (t, _) = r.begin_open(&key("x", 1, false)).expect("open");
        assert_eq!(t.dr_key, key("x", 1, false));
        assert_eq!(
            r.add_provider(key("x", 2, false), Opener::Builtin(DeviceConfig::default())),
            Err(DatError::of(Type::ProviderAlreadyRegistered))
        );
    }

    #[test]
    fn conf_builtin_alias_and_order() {
        let dir = std::env::temp_dir().join(format!("udapl-reg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("dat.conf");
        let mut f = std::fs::File::create(&path).expect("file");
        writeln!(
            f,
            "OpenIB-cma u1.2 nonthreadsafe default libdat.so.1 dapl.1.2 \"transport=tcp\" \"\""
        )
        .expect("w");
        writeln!(f, "broken line").expect("w");
        writeln!(
            f,
            "vendor0 u1.2 nonthreadsafe default /nonexistent/libx.so x.1.0 \"\" \"\""
        )
        .expect("w");
        drop(f);
        let r = Registry::with_conf(Some(&path), Box::new(NoLoader));
        let names: Vec<_> = r.list().into_iter().map(|k| k.name).collect();
        assert_eq!(
            names,
            vec![
                b"OpenIB-cma".to_vec(),
                b"vendor0".to_vec(),
                b"tcp0".to_vec(),
                b"tcp0".to_vec()
            ]
        );
        assert!(r.begin_open(&key("OpenIB-cma", 2, false)).is_ok());
        assert_eq!(
            r.begin_open(&key("vendor0", 2, false)).map(|_| ()),
            Err(DatError::of(Type::ProviderNotFound))
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
