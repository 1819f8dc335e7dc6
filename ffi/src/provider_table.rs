//! Our own `DAT_PROVIDER` tables, one per IA name, made once and never
//! freed. Every handle we give out starts with a pointer to one of them, so
//! C code can use `DAT_HANDLE_TO_PROVIDER` and the upper-case redirection
//! macros on our handles. The slots are given by the caller (our exported
//! entry points); `device_name` is the IA name the table serves.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

use dat_abi::*;

/// The table for IA name `name`: `slots` with that `device_name` (created
/// on the first call for a name; later calls return the same table).
pub(crate) fn for_name(name: &str, slots: &DAT_PROVIDER) -> usize {
    static TABLES: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
    let mut tables = TABLES.lock().unwrap_or_else(|p| p.into_inner());
    let map = tables.get_or_insert_with(HashMap::new);
    if let Some(&t) = map.get(name) {
        return t;
    }
    let device_name = CString::new(name.replace('\0', "")).unwrap_or_default();
    let table: &'static DAT_PROVIDER = Box::leak(Box::new(DAT_PROVIDER {
        device_name: device_name.into_raw(),
        ..*slots
    }));
    let addr = table as *const DAT_PROVIDER as usize;
    map.insert(name.to_owned(), addr);
    addr
}
