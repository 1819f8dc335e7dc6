//! The provider registry: the static registry (SR, the dat.conf records
//! `dat_registry_list_providers` lists) and the dynamic registry (DR, what
//! can be opened: built-in IAs, built-in dat.conf lines, added providers);
//! docs/configuration.md says where each comes from and how an open matches.
//!
//! Invariants: entries are unique per full key (IA name, major, minor,
//! thread safety). A [`Ticket`] from [`Registry::begin_open`] names exactly
//! the counts it raised and [`Registry::release`] undoes exactly those
//! (rulings D24). An external library's DR entries go when it is unloaded,
//! so no entry points into an unloaded library. The lock-free snapshot of
//! provider tables ([`Registry::knows_provider`]) is replaced under the DR
//! mutex, and [`Loader::providers_changed`] runs before any unload.

pub mod conf;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use arc_swap::ArcSwap;

use crate::error::{DatError, Input, Result, Type};
use crate::sync::lock_anyway as lock;
use crate::sys;
use crate::transport::verbs::discover;
use crate::transport::{DeviceConfig, InstanceOptions, TransportKind};

pub use conf::{BuiltinParams, ConfEntry, ConfWarning};

/// A registry key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProviderKey {
    pub name: Vec<u8>,
    pub major: u32,
    pub minor: u32,
    pub thread_safe: bool,
}

/// The name of the built-in loopback IA every process can open (unless a
/// dat.conf entry takes the name).
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

    /// Called (with the DR locked) after the set of registered provider
    /// tables changed, before a library whose tables left it is unloaded:
    /// the C layer drops what it cached about provider handles.
    fn providers_changed(&self) {}
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
    /// Sorted `DAT_PROVIDER *` of the DR's external entries; replaced with
    /// the DR locked, read lock-free.
    tables: ArcSwap<Vec<usize>>,
    builtin_keys: Vec<ProviderKey>,
    loader: Box<dyn Loader>,
    /// The sysfs root RDMA ports are read under (for OFED lines served by
    /// the built-in provider).
    sysfs: PathBuf,
}

thread_local! {
    /// The SR entry whose `dat_provider_init` is running on this thread.
    static INITIALIZING: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The sorted, deduplicated provider tables of the external DR entries.
fn external_tables(dr: &[DrEntry]) -> Vec<usize> {
    let mut t: Vec<usize> = dr
        .iter()
        .filter_map(|e| match e.opener {
            Opener::External { provider, .. } => Some(provider),
            Opener::Builtin(_) => None,
        })
        .collect();
    t.sort_unstable();
    t.dedup();
    t
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

/// The device configuration a built-in dat.conf line asks for, with the
/// RDMA ports of this host ([`discover::sysfs_root`]).
pub fn builtin_device(params: &BuiltinParams) -> DeviceConfig {
    builtin_device_on(params, &discover::sysfs_root())
}

/// The device configuration a built-in dat.conf line asks for, the RDMA
/// ports read under the sysfs root `sysfs`.
///
/// `transport=` decides when given. Without it, the line is verbs when it
/// names an RDMA port: `device=<ibdev>`, a network device bound to an RDMA
/// port (OFED's `"ib0 0"`), or an RDMA device as the bare word (OFED's
/// socket-CM form `"mlx4_0 1"`); otherwise TCP. A verbs port of 0 (OFED's
/// "any") is the port the network device is bound to, else 1.
fn builtin_device_on(params: &BuiltinParams, sysfs: &Path) -> DeviceConfig {
    let named = params.transport.as_deref().and_then(TransportKind::parse);
    let mut cfg = DeviceConfig {
        transport: named.unwrap_or_default(),
        netdev: params.netdev.clone(),
        family: params.family,
        device: params.device.clone(),
        port: params.port.unwrap_or(1),
        options: params.options,
    };
    if named.is_some_and(|t| t != TransportKind::Verbs) {
        return cfg;
    }
    let bound = params
        .netdev
        .as_deref()
        .filter(|_| params.device.is_none())
        .and_then(|netdev| discover::port_of_netdev(sysfs, netdev));
    if named.is_none() {
        if let Some((device, _)) = &bound {
            cfg.device = Some(device.clone());
        } else if params.device.is_none() {
            match params.netdev.as_deref() {
                Some(name) if discover::has_device(sysfs, name) => {
                    cfg.device = Some(name.to_owned());
                    cfg.netdev = None;
                }
                _ => return cfg,
            }
        }
        cfg.transport = TransportKind::Verbs;
        cfg.options = InstanceOptions::defaults(TransportKind::Verbs);
        if params.options != InstanceOptions::defaults(TransportKind::Tcp) {
            tracing::warn!(device = ?cfg.device,
                "dat.conf: TCP options ignored: the line names an RDMA port, so it opens \
                 the verbs transport (transport=tcp keeps TCP)");
        }
    }
    let given = params.port.filter(|&p| p != 0);
    cfg.port = given
        .or(bound.map(|(_, port)| u32::from(port)))
        .unwrap_or(1);
    cfg
}

/// True for OFED's uDAPL provider libraries (`libdaplcma.so.1`,
/// `libdaplofa.so.2`, `libdaploscm.so.2`, `libdaploucm.so.2`, ...: basename
/// `libdapl*`): when one cannot be loaded, the built-in provider serves its
/// line.
pub fn is_ofed_library(library: &str) -> bool {
    let basename = library.rsplit('/').next().unwrap_or(library);
    basename.starts_with("libdapl") && basename.contains(".so")
}

/// What the registry reads of the host: the network interfaces that get a
/// TCP IA of their own, every interface address, and the sysfs root the
/// RDMA ports are read under.
struct Host {
    interfaces: Vec<String>,
    addresses: Vec<sys::IfAddr>,
    sysfs: PathBuf,
}

impl Host {
    fn this_host() -> Host {
        Host {
            interfaces: crate::transport::interface_ia_names(),
            addresses: sys::interface_addresses(),
            sysfs: discover::sysfs_root(),
        }
    }

    /// One verbs IA per active RDMA port whose network device has an
    /// address, named `OpenIB-<device>-<port>`, in device and port order.
    fn rdma_ias(&self) -> Vec<(String, DeviceConfig)> {
        discover::ports(&self.sysfs)
            .into_iter()
            .filter(|p| p.active)
            .filter_map(|p| {
                let netdev = p.netdev?;
                if !self.addresses.iter().any(|a| a.name == netdev) {
                    return None;
                }
                let cfg = DeviceConfig {
                    transport: TransportKind::Verbs,
                    netdev: Some(netdev),
                    family: None,
                    device: Some(p.device.clone()),
                    port: u32::from(p.port),
                    options: InstanceOptions::defaults(TransportKind::Verbs),
                };
                Some((discover::ia_name(&p.device, p.port), cfg))
            })
            .collect()
    }

    /// The built-in IAs registered without dat.conf, in listing order:
    /// `tcp0` (loopback) first, then the RDMA ports' verbs IAs, then one
    /// per network interface, named after it (TCP through that interface,
    /// default options). A name already taken is skipped.
    fn automatic_ias(&self) -> Vec<(String, DeviceConfig)> {
        let mut ias = vec![(BUILTIN_IA_NAME.to_owned(), DeviceConfig::default())];
        let tcp = self.interfaces.iter().map(|name| {
            let cfg = DeviceConfig {
                netdev: Some(name.clone()),
                port: 1,
                ..DeviceConfig::default()
            };
            (name.clone(), cfg)
        });
        for (name, cfg) in self.rdma_ias().into_iter().chain(tcp) {
            if !ias.iter().any(|(n, _)| *n == name) {
                ias.push((name, cfg));
            }
        }
        ias
    }
}

impl Registry {
    /// Builds the registry from the dat.conf the environment names.
    pub fn from_environment(loader: Box<dyn Loader>) -> Registry {
        Self::with_conf(conf_path().as_deref(), loader)
    }

    /// Builds the registry from `path` (none: no dat.conf), with a built-in
    /// IA for each active RDMA port with an address and for each network
    /// interface that is up and has an address
    /// ([`crate::transport::interface_ia_names`]).
    pub fn with_conf(path: Option<&Path>, loader: Box<dyn Loader>) -> Registry {
        Self::on_host(path, Host::this_host(), loader)
    }

    /// Builds the registry from `path` (none: no dat.conf) for `host`.
    ///
    /// The dat.conf entries come first (listing order and lookup), then the
    /// automatic built-in IAs ([`Host::automatic_ias`]). An automatic IA
    /// whose name a dat.conf entry uses is left out altogether (both
    /// thread-safety values), so a dat.conf line for, say, `eth0` replaces
    /// the automatic `eth0` whatever provider it names.
    fn on_host(path: Option<&Path>, host: Host, loader: Box<dyn Loader>) -> Registry {
        let mut dr: Vec<DrEntry> = Vec::new();
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
                            "dat.conf: unknown or malformed built-in provider parameter '{u}' ignored");
                    }
                    dr.push(DrEntry {
                        key: key.clone(),
                        opener: Opener::Builtin(builtin_device_on(&params, &host.sysfs)),
                        count: 0,
                        owner: None,
                    });
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
        let mut builtin_keys = Vec::new();
        for (name, device) in host.automatic_ias() {
            let name = name.into_bytes();
            if sr.iter().any(|e| e.key.name == name) {
                tracing::debug!(ia = %String::from_utf8_lossy(&name),
                    "built-in IA replaced by the dat.conf entry of that name");
                continue;
            }
            for thread_safe in [false, true] {
                let key = ProviderKey {
                    name: name.clone(),
                    major: 1,
                    minor: 2,
                    thread_safe,
                };
                dr.push(DrEntry {
                    key: key.clone(),
                    opener: Opener::Builtin(device.clone()),
                    count: 0,
                    owner: None,
                });
                builtin_keys.push(key);
            }
        }
        let tables = ArcSwap::from_pointee(external_tables(&dr));
        Registry {
            sr: Mutex::new(sr),
            dr: Mutex::new(dr),
            tables,
            builtin_keys,
            loader,
            sysfs: host.sysfs,
        }
    }

    /// `dat_registry_list_providers`: dat.conf entries in file order, then
    /// the built-in IAs (`tcp0` first, then the network interfaces').
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
        self.publish(&dr);
        Ok(())
    }

    /// `dat_registry_remove_provider`.
    pub fn remove_provider(&self, key: &ProviderKey) -> Result<()> {
        let mut dr = lock(&self.dr);
        let i = dr
            .iter()
            .position(|e| &e.key == key)
            .ok_or(DatError::invalid(Input::ProviderInfo))?;
        if dr[i].count > 0 {
            return Err(DatError::of(Type::ProviderInUse));
        }
        dr.remove(i);
        self.publish(&dr);
        Ok(())
    }

    /// Replaces the table snapshot after a change of the DR (whose lock the
    /// caller holds, so snapshots are published in the order of the changes)
    /// and tells the loader. Nothing is done if the set of tables is the
    /// same; returns whether it changed.
    fn publish(&self, dr: &MutexGuard<'_, Vec<DrEntry>>) -> bool {
        let tables = external_tables(dr);
        if **self.tables.load() == tables {
            return false;
        }
        self.tables.store(std::sync::Arc::new(tables));
        self.loader.providers_changed();
        true
    }

    /// True if some DR entry has this `DAT_PROVIDER *` (checked before a
    /// foreign handle is accepted). Takes no lock: reads the current snapshot.
    pub fn knows_provider(&self, provider: usize) -> bool {
        self.tables.load().binary_search(&provider).is_ok()
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
                    if e.lib.is_none() {
                        self.serve_ofed_line(e);
                    }
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

    /// After OFED's provider library for `e` failed to load: the built-in
    /// provider serves the line with its instance data from now on (a DAT
    /// 1.2 line only; the DR keeps any entry a provider registered for the
    /// key).
    fn serve_ofed_line(&self, e: &mut SrEntry) {
        if !is_ofed_library(&e.conf.library) || e.key.major != 1 || e.key.minor > 2 {
            return;
        }
        let params = conf::parse_builtin_params(&e.conf.instance_data);
        for u in &params.unknown {
            tracing::warn!(
                line = e.conf.line,
                "dat.conf: unknown or malformed built-in provider parameter '{u}' ignored"
            );
        }
        let device = builtin_device_on(&params, &self.sysfs);
        tracing::warn!(ia = %String::from_utf8_lossy(&e.key.name), library = %e.conf.library,
            line = e.conf.line, transport = device.transport.name(),
            "dat.conf: OFED provider library not loaded; the built-in provider serves this line");
        e.builtin = true;
        let mut dr = lock(&self.dr);
        if !dr.iter().any(|d| d.key == e.key) {
            dr.push(DrEntry {
                key: e.key.clone(),
                opener: Opener::Builtin(device),
                count: 0,
                owner: None,
            });
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
                    {
                        let mut dr = lock(&self.dr);
                        dr.retain(|d| d.owner != Some(i) || d.count > 0);
                        // The library goes away: the loader hears of it even
                        // if none of its tables was registered.
                        if !self.publish(&dr) {
                            self.loader.providers_changed();
                        }
                    }
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

    impl Registry {
        /// A registry for a host with these interfaces and no RDMA ports.
        fn with_conf_and_interfaces(
            path: Option<&Path>,
            interfaces: &[String],
            loader: Box<dyn Loader>,
        ) -> Registry {
            let host = Host {
                interfaces: interfaces.to_vec(),
                addresses: Vec::new(),
                sysfs: PathBuf::from("/nonexistent/sysfs"),
            };
            Registry::on_host(path, host, loader)
        }
    }

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
        let r = Registry::with_conf_and_interfaces(None, &[], Box::new(NoLoader));
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
            Err(DatError::invalid(Input::ProviderInfo))
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

    /// A loader that counts `providers_changed` calls.
    #[derive(Default)]
    struct CountingLoader(std::sync::Arc<std::sync::atomic::AtomicUsize>);
    impl Loader for CountingLoader {
        fn load(&self, _: &ConfEntry) -> Option<Box<dyn ExternalLibrary>> {
            None
        }
        fn providers_changed(&self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn external(provider: usize) -> Opener {
        Opener::External {
            open_fn: 0x1000,
            provider,
        }
    }

    #[test]
    fn provider_snapshot_follows_adds_and_removes() {
        let changes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = || changes.load(std::sync::atomic::Ordering::SeqCst);
        let r = Registry::with_conf(None, Box::new(CountingLoader(changes.clone())));
        assert!(!r.knows_provider(0x5000));
        assert_eq!(n(), 0);
        for (i, p) in [0x9000usize, 0x5000, 0x7000].into_iter().enumerate() {
            r.add_provider(key(&format!("p{i}"), 2, false), external(p))
                .expect("add");
        }
        assert_eq!(n(), 3);
        assert!(r.knows_provider(0x5000) && r.knows_provider(0x7000) && r.knows_provider(0x9000));
        assert!(!r.knows_provider(0x6000) && !r.knows_provider(0));
        assert_eq!(**r.tables.load(), vec![0x5000, 0x7000, 0x9000]);
        // A second key on a known table leaves the set (and the caches) alone.
        r.add_provider(key("p0", 3, false), external(0x9000))
            .expect("add");
        assert_eq!(n(), 3);
        r.remove_provider(&key("p0", 2, false)).expect("remove");
        assert!(r.knows_provider(0x9000));
        assert_eq!(n(), 3);
        r.remove_provider(&key("p0", 3, false)).expect("remove");
        assert!(!r.knows_provider(0x9000));
        assert_eq!(n(), 4);
        // A built-in entry is not a table.
        r.add_provider(key("b", 2, false), Opener::Builtin(DeviceConfig::default()))
            .expect("add");
        assert_eq!(n(), 4);
        // A refused removal publishes nothing.
        let (t, _) = r.begin_open(&key("p1", 2, false)).expect("open");
        assert!(r.remove_provider(&key("p1", 2, false)).is_err());
        assert!(r.knows_provider(0x5000));
        r.release(&t);
        r.remove_provider(&key("p1", 2, false)).expect("remove");
        assert!(!r.knows_provider(0x5000));
        assert_eq!(n(), 5);
    }

    struct DummyLib;
    impl ExternalLibrary for DummyLib {
        fn init(&self) {}
        fn fini(&self) {}
    }
    struct DummyLoader(std::sync::Arc<std::sync::atomic::AtomicUsize>);
    impl Loader for DummyLoader {
        fn load(&self, _: &ConfEntry) -> Option<Box<dyn ExternalLibrary>> {
            Some(Box::new(DummyLib))
        }
        fn providers_changed(&self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn library_unload_is_reported_even_without_tables() {
        let dir = std::env::temp_dir().join(format!("udapl-reg-unload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("dat.conf");
        std::fs::write(
            &path,
            "quiet0 u1.2 nonthreadsafe default /nonexistent/libq.so q.1.0 \"\" \"\"\n",
        )
        .expect("write");
        let changes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let r = Registry::with_conf(Some(&path), Box::new(DummyLoader(changes.clone())));
        // Loaded, registers nothing, so the open fails and the library goes.
        assert_eq!(
            r.begin_open(&key("quiet0", 2, false)).map(|_| ()),
            Err(DatError::of(Type::ProviderNotFound))
        );
        assert_eq!(changes.load(std::sync::atomic::Ordering::SeqCst), 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn provider_snapshot_is_read_while_the_registry_changes() {
        let r = std::sync::Arc::new(Registry::with_conf(None, Box::new(NoLoader)));
        r.add_provider(key("stay", 2, false), external(0x4000))
            .expect("add");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (r, stop) = (r.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut seen = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        assert!(r.knows_provider(0x4000));
                        assert!(!r.knows_provider(0x4008));
                        seen += u64::from(r.knows_provider(0x8000));
                    }
                    seen
                })
            })
            .collect();
        for _ in 0..2000 {
            r.add_provider(key("churn", 2, false), external(0x8000))
                .expect("add");
            // The DR lock is not needed to read the snapshot.
            let dr = lock(&r.dr);
            assert!(r.knows_provider(0x8000));
            drop(dr);
            r.remove_provider(&key("churn", 2, false)).expect("remove");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in readers {
            t.join().expect("reader");
        }
        assert!(!r.knows_provider(0x8000));
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
        let r = Registry::with_conf_and_interfaces(Some(&path), &[], Box::new(NoLoader));
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

    fn names(r: &Registry) -> Vec<(String, bool)> {
        r.list()
            .into_iter()
            .map(|k| (String::from_utf8_lossy(&k.name).into_owned(), k.thread_safe))
            .collect()
    }

    fn pairs(names: &[&str]) -> Vec<(String, bool)> {
        names
            .iter()
            .flat_map(|n| [(n.to_string(), false), (n.to_string(), true)])
            .collect()
    }

    fn interfaces(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn opener(r: &Registry, name: &str, ts: bool) -> Option<Opener> {
        let (t, o) = r.begin_open(&key(name, 2, ts)).ok()?;
        r.release(&t);
        Some(o)
    }

    #[test]
    fn interface_ias_follow_tcp0() {
        let r = Registry::with_conf_and_interfaces(
            None,
            &interfaces(&["eth0", "veth1", "eth0", "tcp0"]),
            Box::new(NoLoader),
        );
        assert_eq!(names(&r), pairs(&["tcp0", "eth0", "veth1"]));
        for ts in [false, true] {
            let want = DeviceConfig {
                netdev: Some("veth1".to_owned()),
                port: 1,
                ..DeviceConfig::default()
            };
            assert_eq!(opener(&r, "veth1", ts), Some(Opener::Builtin(want)));
            assert_eq!(
                opener(&r, "tcp0", ts),
                Some(Opener::Builtin(DeviceConfig::default()))
            );
        }
        // Like tcp0, they are DR entries: a provider cannot take the key.
        assert_eq!(
            r.add_provider(key("eth0", 2, false), external(0x3000)),
            Err(DatError::of(Type::ProviderAlreadyRegistered))
        );
    }

    #[test]
    fn conf_entries_replace_built_in_ias_of_their_name() {
        let dir = std::env::temp_dir().join(format!("udapl-reg-if-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("dat.conf");
        std::fs::write(
            &path,
            "eth0 u1.2 nonthreadsafe default builtin udapl.1.2 \"netdev=eth0 family=inet6 crc=on ack=local\" \"\"\n\
             veth1 u1.2 threadsafe default /nonexistent/libv.so v.1.0 \"\" \"\"\n\
             tcp0 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 \"if=lo rnr_timeout=5 bogus=1\" \"\"\n",
        )
        .expect("write");
        let r = Registry::with_conf_and_interfaces(
            Some(&path),
            &interfaces(&["eth0", "veth1", "eth2"]),
            Box::new(NoLoader),
        );
        let mut want = vec![
            ("eth0".to_owned(), false),
            ("veth1".to_owned(), true),
            ("tcp0".to_owned(), false),
        ];
        want.extend(pairs(&["eth2"]));
        assert_eq!(names(&r), want);
        // The dat.conf line, with its options, opens eth0 ...
        let Some(Opener::Builtin(dev)) = opener(&r, "eth0", false) else {
            panic!("eth0 is built-in");
        };
        assert_eq!(dev.netdev.as_deref(), Some("eth0"));
        assert_eq!(dev.family, Some(crate::transport::AddressFamily::Inet6));
        let values = dev.options.values();
        assert!(values.contains(&("crc", "on".to_owned())));
        assert!(values.contains(&("ack", "local".to_owned())));
        // ... and the automatic eth0 is gone for both thread-safety values.
        assert!(opener(&r, "eth0", true).is_none());
        // A third-party line replaces it too (its library does not load).
        assert!(opener(&r, "veth1", true).is_none());
        assert!(opener(&r, "veth1", false).is_none());
        let Some(Opener::Builtin(dev)) = opener(&r, "tcp0", false) else {
            panic!("tcp0 is built-in");
        };
        assert_eq!(dev.netdev.as_deref(), Some("lo"));
        assert!(dev
            .options
            .values()
            .contains(&("rnr_timeout", "5".to_owned())));
        assert!(opener(&r, "tcp0", true).is_none());
        assert!(opener(&r, "eth2", true).is_some());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn this_hosts_interfaces_are_listed_after_tcp0() {
        let r = Registry::with_conf(None, Box::new(NoLoader));
        let mut want = vec!["tcp0".to_owned()];
        want.extend(Host::this_host().rdma_ias().into_iter().map(|(n, _)| n));
        want.extend(crate::transport::interface_ia_names());
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        assert_eq!(names(&r), pairs(&want));
        assert!(!want[1..].contains(&"lo"));
    }

    use crate::transport::verbs::discover::fake::Sysfs;

    fn ifaddr(name: &str, ip: &str) -> sys::IfAddr {
        sys::IfAddr {
            name: name.to_owned(),
            up: true,
            loopback: false,
            ip: ip.parse().expect("ip"),
            scope_id: 0,
        }
    }

    /// rxe0 and siw0 on eth0 (which has an address), mlx5_0 port 1 on ib0
    /// (no address) and port 2 down on ib1 (with an address), rxe1 active
    /// with no network device.
    fn rdma_host(tag: &str) -> (Sysfs, Host) {
        let s = Sysfs::new(tag);
        s.rxe("rxe0", "eth0")
            .siw("siw0")
            .netdev("eth0", "52:54:00:12:34:56", None)
            .device("mlx5_0", "1: CA")
            .port("mlx5_0", 1, "4: ACTIVE", "InfiniBand")
            .port("mlx5_0", 2, "1: DOWN", "InfiniBand")
            .rdma_on_bus("mlx5_0", "pci/0000:00:03.0")
            .netdev("ib0", "00:00:10:49", Some(("pci/0000:00:03.0", 0)))
            .netdev("ib1", "00:00:10:50", Some(("pci/0000:00:03.0", 1)))
            .device("rxe1", "1: CA")
            .port("rxe1", 1, "4: ACTIVE", "Ethernet");
        let host = Host {
            interfaces: interfaces(&["eth0", "ib1"]),
            addresses: vec![ifaddr("eth0", "10.0.2.15"), ifaddr("ib1", "192.168.7.1")],
            sysfs: s.root().to_owned(),
        };
        (s, host)
    }

    fn verbs(device: Option<&str>, port: u32, netdev: Option<&str>) -> DeviceConfig {
        DeviceConfig {
            transport: TransportKind::Verbs,
            netdev: netdev.map(str::to_owned),
            family: None,
            device: device.map(str::to_owned),
            port,
            options: InstanceOptions::defaults(TransportKind::Verbs),
        }
    }

    #[test]
    fn active_rdma_ports_with_an_address_get_verbs_ias_after_tcp0() {
        let (_s, host) = rdma_host("reg-auto");
        let r = Registry::on_host(None, host, Box::new(NoLoader));
        assert_eq!(
            names(&r),
            pairs(&["tcp0", "OpenIB-rxe0-1", "OpenIB-siw0-1", "eth0", "ib1"])
        );
        for ts in [false, true] {
            assert_eq!(
                opener(&r, "OpenIB-rxe0-1", ts),
                Some(Opener::Builtin(verbs(Some("rxe0"), 1, Some("eth0"))))
            );
            assert_eq!(
                opener(&r, "OpenIB-siw0-1", ts),
                Some(Opener::Builtin(verbs(Some("siw0"), 1, Some("eth0"))))
            );
        }
    }

    #[test]
    fn a_conf_entry_replaces_the_verbs_ia_of_its_name() {
        let (s, host) = rdma_host("reg-replace");
        let path = s.root().join("dat.conf");
        std::fs::write(
            &path,
            "OpenIB-rxe0-1 u1.2 threadsafe default libdat.so.1 udapl.1.2 \"transport=tcp netdev=eth0\" \"\"\n",
        )
        .expect("write");
        let r = Registry::on_host(Some(&path), host, Box::new(NoLoader));
        let mut want = vec![("OpenIB-rxe0-1".to_owned(), true)];
        want.extend(pairs(&["tcp0", "OpenIB-siw0-1", "eth0", "ib1"]));
        assert_eq!(names(&r), want);
        let Some(Opener::Builtin(dev)) = opener(&r, "OpenIB-rxe0-1", true) else {
            panic!("built-in");
        };
        assert_eq!(dev.transport, TransportKind::Tcp);
        assert!(opener(&r, "OpenIB-rxe0-1", false).is_none());
    }

    fn device_of(instance_data: &str, sysfs: &Path) -> DeviceConfig {
        builtin_device_on(&conf::parse_builtin_params(instance_data), sysfs)
    }

    #[test]
    fn conf_lines_that_name_an_rdma_port_open_verbs() {
        let (s, _host) = rdma_host("reg-lines");
        let root = s.root();
        // OFED's form: the network device's port, OFED's port 0 ignored.
        assert_eq!(
            device_of("ib0 0", root),
            verbs(Some("mlx5_0"), 1, Some("ib0"))
        );
        assert_eq!(
            device_of("ib1 0", root),
            verbs(Some("mlx5_0"), 2, Some("ib1"))
        );
        assert_eq!(
            device_of("eth0 0", root),
            verbs(Some("rxe0"), 1, Some("eth0"))
        );
        // A port number other than 0 is taken.
        assert_eq!(
            device_of("ib0 2", root),
            verbs(Some("mlx5_0"), 2, Some("ib0"))
        );
        // OFED's socket-CM form names the device itself.
        assert_eq!(device_of("mlx5_0 2", root), verbs(Some("mlx5_0"), 2, None));
        assert_eq!(device_of("mlx5_0 0", root), verbs(Some("mlx5_0"), 1, None));
        // device= implies verbs.
        assert_eq!(
            device_of("device=rxe1 port=1", root),
            verbs(Some("rxe1"), 1, None)
        );
        assert_eq!(
            device_of("transport=verbs device=mlx5_0 port=2", root),
            verbs(Some("mlx5_0"), 2, None)
        );
        // transport=verbs netdev=: the device is the transport's to find;
        // the port defaults to the bound one.
        assert_eq!(
            device_of("transport=verbs netdev=ib1", root),
            verbs(None, 2, Some("ib1"))
        );
        assert_eq!(
            device_of("transport=verbs netdev=eth9", root),
            verbs(None, 1, Some("eth9"))
        );
        // transport=tcp, or a network device with no RDMA port: TCP as before.
        for line in ["transport=tcp netdev=ib0", "eth9 0", "lo", ""] {
            let dev = device_of(line, root);
            assert_eq!(dev.transport, TransportKind::Tcp, "{line}");
            assert_eq!(dev.device, None, "{line}");
        }
        assert_eq!(device_of("eth9 0", root).netdev.as_deref(), Some("eth9"));
        // TCP options on a line that turns out to be verbs are dropped.
        assert_eq!(
            device_of("ib0 0 crc=on", root),
            verbs(Some("mlx5_0"), 1, Some("ib0"))
        );
        // Without RDMA, nothing changes.
        let none = Path::new("/nonexistent/sysfs");
        assert_eq!(device_of("ib0 0", none).transport, TransportKind::Tcp);
        assert_eq!(device_of("ib0 0", none).port, 0);
    }

    #[test]
    fn an_unmodified_ofed_dat_conf_is_served_by_the_built_in_provider() {
        let (s, host) = rdma_host("reg-ofed");
        let path = s.root().join("dat.conf");
        std::fs::write(
            &path,
            "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"ib0 0\" \"\"\n\
             OpenIB-mlx5_0-2 u1.2 nonthreadsafe default /usr/lib64/libdaplscm.so.1 dapl.1.2 \"mlx5_0 2\" \"\"\n\
             OpenIB-eth9 u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"eth9 0\" \"\"\n\
             ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n\
             vendor0 u1.2 nonthreadsafe default /nonexistent/libx.so x.1.0 \"ib0 0\" \"\"\n",
        )
        .expect("write");
        let r = Registry::on_host(Some(&path), host, Box::new(NoLoader));
        assert_eq!(
            opener(&r, "OpenIB-cma", false),
            Some(Opener::Builtin(verbs(Some("mlx5_0"), 1, Some("ib0"))))
        );
        // Served from then on, and not again loaded.
        assert!(opener(&r, "OpenIB-cma", false).is_some());
        assert_eq!(
            opener(&r, "OpenIB-mlx5_0-2", false),
            Some(Opener::Builtin(verbs(Some("mlx5_0"), 2, None)))
        );
        let Some(Opener::Builtin(dev)) = opener(&r, "OpenIB-eth9", false) else {
            panic!("served by the built-in provider");
        };
        assert_eq!(
            (dev.transport, dev.netdev.as_deref()),
            (TransportKind::Tcp, Some("eth9"))
        );
        // A DAT 2.0 line, and a library that is not OFED's, are not served.
        let mut v2 = key("ofa-v2-ib0", 0, false);
        v2.major = 2;
        assert!(r.begin_open(&v2).is_err());
        assert!(opener(&r, "vendor0", false).is_none());
        // The thread-safe key was not in dat.conf.
        assert!(opener(&r, "OpenIB-cma", true).is_none());
    }

    #[test]
    fn an_ofed_library_that_loads_is_used() {
        let (s, host) = rdma_host("reg-ofed-loads");
        let path = s.root().join("dat.conf");
        std::fs::write(
            &path,
            "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"ib0 0\" \"\"\n",
        )
        .expect("write");
        let changes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let r = Registry::on_host(Some(&path), host, Box::new(DummyLoader(changes)));
        // The library loaded (and registered nothing): no built-in entry.
        assert_eq!(
            r.begin_open(&key("OpenIB-cma", 2, false)).map(|_| ()),
            Err(DatError::of(Type::ProviderNotFound))
        );
    }

    #[test]
    fn ofed_library_names() {
        for lib in [
            "libdaplcma.so.1",
            "libdaplofa.so.2",
            "libdaploscm.so.2",
            "libdaploucm.so.2",
            "/usr/lib64/libdaplscm.so.1",
        ] {
            assert!(is_ofed_library(lib), "{lib}");
        }
        for lib in ["libdat.so.1", "libdapl", "/opt/dapl/libx.so", "builtin"] {
            assert!(!is_ofed_library(lib), "{lib}");
        }
    }
}
