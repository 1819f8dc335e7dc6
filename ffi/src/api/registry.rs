//! `dat_registry_list_providers`, `dat_registry_add_provider`,
//! `dat_registry_remove_provider`.

use udapl::error::{DatError, Input};
use udapl::registry::Opener;

use crate::boundary::{guard, input, out};
use crate::registry_glue::{info_of, key_of, registry};
use dat_abi::*;

/// Lists the registry: dat.conf entries in file order, then the built-in IAs.
///
/// # Safety
/// `dat_provider_list` holds `max_to_return` pointers to writable
/// `DAT_PROVIDER_INFO` structs.
///
/// # Returns
/// `DAT_SUCCESS` (as many entries copied as fit), `DAT_INVALID_PARAMETER`
/// (ARG1 `max_to_return == 0`: the size probe, `*entries_returned` = size;
/// ARG2 NULL count; ARG3 NULL list or element).
#[no_mangle]
pub unsafe extern "C" fn dat_registry_list_providers(
    max_to_return: DAT_COUNT,
    entries_returned: *mut DAT_COUNT,
    dat_provider_list: *mut *mut DAT_PROVIDER_INFO,
) -> DAT_RETURN {
    guard(|| {
        let r = crate::boundary::run(|| {
            let count = out(entries_returned, Input::EntriesReturned)?;
            let all = registry().list();
            let size = i32::try_from(all.len()).unwrap_or(i32::MAX);
            if max_to_return == 0 {
                count.set(size);
                return Err(DatError::invalid(Input::MaxToReturn));
            }
            if dat_provider_list.is_null() {
                count.set(size);
                return Err(DatError::invalid(Input::DatProviderList));
            }
            let n = usize::try_from(max_to_return).unwrap_or(0).min(all.len());
            for (i, key) in all.iter().take(n).enumerate() {
                // SAFETY: the list holds at least `max_to_return` > i pointers;
                // each is read by value.
                let p = unsafe { dat_provider_list.add(i).read() };
                let Ok(slot) = out(p, Input::DatProviderList) else {
                    count.set(size);
                    return Err(DatError::invalid(Input::DatProviderList));
                };
                slot.set(info_of(key));
            }
            count.set(i32::try_from(n).unwrap_or(i32::MAX));
            Ok(())
        });
        crate::boundary::code(
            r,
            &["max_to_return", "entries_returned", "dat_provider_list"],
        )
    })
}

/// Called by a provider (normally from `dat_provider_init`) to make an IA
/// name openable.
///
/// # Safety
/// `provider` points at a `DAT_PROVIDER` that stays valid while registered;
/// `provider_info` at a readable `DAT_PROVIDER_INFO`.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_PARAMETER` (ARG1, ARG2),
/// `DAT_PROVIDER_ALREADY_REGISTERED`.
#[no_mangle]
pub unsafe extern "C" fn dat_registry_add_provider(
    provider: *mut DAT_PROVIDER,
    provider_info: *const DAT_PROVIDER_INFO,
) -> DAT_RETURN {
    guard(|| {
        let r = crate::boundary::run(|| {
            let p = input(provider as *const DAT_PROVIDER, Input::Provider)?;
            let info = input(provider_info, Input::ProviderInfo)?;
            let open_fn = p.ia_open_func.ok_or(DatError::invalid(Input::Provider))?;
            let opener =
                if open_fn as usize == crate::api::ia::builtin_ia_open as *const () as usize {
                    Opener::Builtin(Default::default())
                } else {
                    Opener::External {
                        open_fn: open_fn as usize,
                        provider: provider as usize,
                    }
                };
            registry().add_provider(key_of(&info)?, opener)
        });
        crate::boundary::code(r, &["provider", "provider_info"])
    })
}

/// Called by a provider to remove an IA name from the registry.
///
/// # Safety
/// Pointers are NULL or readable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_PARAMETER` (ARG1, ARG2, or no such entry),
/// `DAT_PROVIDER_IN_USE`.
#[no_mangle]
pub unsafe extern "C" fn dat_registry_remove_provider(
    provider: *mut DAT_PROVIDER,
    provider_info: *const DAT_PROVIDER_INFO,
) -> DAT_RETURN {
    guard(|| {
        let r = crate::boundary::run(|| {
            input(provider as *const DAT_PROVIDER, Input::Provider)?;
            let info = input(provider_info, Input::ProviderInfo)?;
            registry().remove_provider(&key_of(&info)?)
        });
        crate::boundary::code(r, &["provider", "provider_info"])
    })
}
