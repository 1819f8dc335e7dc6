#![no_main]
// See src/fuzz.rs: udapl::fuzz::mpa.
libfuzzer_sys::fuzz_target!(|data: &[u8]| udapl::fuzz::mpa(data));
