//! The process-wide registry, third-party library loading (`dlopen`) and the
//! record of which registry entry each open IA came from.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::{Mutex, OnceLock};

use udapl::registry::{ConfEntry, ExternalLibrary, Loader, ProviderKey, Registry, Ticket};

use dat_abi::DAT_PROVIDER_INFO;

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The registry, read from dat.conf on first use.
pub(crate) fn registry() -> &'static Registry {
    REGISTRY.get_or_init(|| Registry::from_environment(Box::new(DlLoader)))
}

/// The registry if something already initialised it.
pub(crate) fn existing() -> Option<&'static Registry> {
    REGISTRY.get()
}

/// Open IAs (ours and third-party) -> the registry entry they hold.
static TICKETS: Mutex<Option<HashMap<usize, Ticket>>> = Mutex::new(None);

pub(crate) fn remember(ia: usize, t: Ticket) {
    let mut m = TICKETS.lock().unwrap_or_else(|p| p.into_inner());
    m.get_or_insert_with(HashMap::new).insert(ia, t);
}

/// Releases the registry entry of a closed IA.
pub(crate) fn forget(ia: usize) {
    let t = {
        let mut m = TICKETS.lock().unwrap_or_else(|p| p.into_inner());
        m.get_or_insert_with(HashMap::new).remove(&ia)
    };
    if let Some(t) = t {
        registry().release(&t);
    }
}

/// A `DAT_PROVIDER_INFO` for a key.
pub(crate) fn info_of(key: &ProviderKey) -> DAT_PROVIDER_INFO {
    DAT_PROVIDER_INFO {
        ia_name: crate::boundary::c_name(&key.name),
        dapl_version_major: key.major,
        dapl_version_minor: key.minor,
        is_thread_safe: u32::from(key.thread_safe),
    }
}

/// The key of a `DAT_PROVIDER_INFO`; its name must end with a NUL within
/// its `DAT_NAME_MAX_LENGTH` bytes.
pub(crate) fn key_of(info: &DAT_PROVIDER_INFO) -> udapl::Result<ProviderKey> {
    let len = info
        .ia_name
        .iter()
        .position(|c| *c == 0)
        .ok_or(udapl::DatError::invalid(udapl::error::Input::ProviderInfo))?;
    let name: Vec<u8> = info.ia_name[..len].iter().map(|c| *c as u8).collect();
    Ok(ProviderKey {
        name,
        major: info.dapl_version_major,
        minor: info.dapl_version_minor,
        thread_safe: info.is_thread_safe != 0,
    })
}

type InitFn = unsafe extern "C" fn(*const DAT_PROVIDER_INFO, *const libc::c_char);
type FiniFn = unsafe extern "C" fn(*const DAT_PROVIDER_INFO);

struct DlLoader;

struct DlLibrary {
    handle: *mut libc::c_void,
    init: Option<InitFn>,
    fini: Option<FiniFn>,
    /// The entry key handed to init/fini; stays at one address while loaded.
    info: Box<DAT_PROVIDER_INFO>,
    instance: CString,
}

// SAFETY: the dlopen handle and function pointers may be used from any
// thread; the registry serialises init/fini under its mutex.
unsafe impl Send for DlLibrary {}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated thread-local string.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-NULL, NUL-terminated.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Loader for DlLoader {
    fn load(&self, entry: &ConfEntry) -> Option<Box<dyn ExternalLibrary>> {
        let path = CString::new(entry.library.as_bytes()).ok()?;
        // SAFETY: `path` is NUL-terminated; RTLD_NOW as the reference does.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
        if handle.is_null() {
            tracing::error!(library = %entry.library, "DAT: library load failure: {}", dl_error());
            return None;
        }
        // SAFETY: looking up symbols in a handle we just opened.
        let init = unsafe { libc::dlsym(handle, c"dat_provider_init".as_ptr()) };
        // SAFETY: as above.
        let fini = unsafe { libc::dlsym(handle, c"dat_provider_fini".as_ptr()) };
        let key = ProviderKey {
            name: entry.ia_name.clone(),
            major: entry.api_major,
            minor: entry.api_minor,
            thread_safe: entry.thread_safe,
        };
        Some(Box::new(DlLibrary {
            handle,
            // SAFETY: a provider's dat_provider_init/fini have these 1.2 signatures.
            init: (!init.is_null())
                .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, InitFn>(init) }),
            // SAFETY: as above.
            fini: (!fini.is_null())
                .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, FiniFn>(fini) }),
            info: Box::new(info_of(&key)),
            instance: CString::new(entry.instance_data.replace('\0', "")).unwrap_or_default(),
        }))
    }

    fn providers_changed(&self) {
        crate::foreign::forget_pages();
    }
}

impl ExternalLibrary for DlLibrary {
    fn init(&self) {
        if let Some(f) = self.init {
            // SAFETY: the provider's entry point, called with the entry key
            // (valid while the library is loaded) and its instance data.
            unsafe { f(&*self.info, self.instance.as_ptr()) };
        }
    }

    fn fini(&self) {
        if let Some(f) = self.fini {
            // SAFETY: as in init.
            unsafe { f(&*self.info) };
        }
    }
}

impl Drop for DlLibrary {
    fn drop(&mut self) {
        // SAFETY: the handle came from dlopen and is closed once; nothing of
        // the library is referenced any more (its registry entries are gone).
        if unsafe { libc::dlclose(self.handle) } != 0 {
            tracing::warn!("dlclose failed: {}", dl_error());
        }
    }
}
