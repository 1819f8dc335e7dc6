#![no_main]
// See src/fuzz.rs: udapl::fuzz::terminate.
libfuzzer_sys::fuzz_target!(|data: &[u8]| udapl::fuzz::terminate(data));
