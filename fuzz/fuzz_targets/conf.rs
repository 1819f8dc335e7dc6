#![no_main]
// See src/fuzz.rs: udapl::fuzz::conf_file.
libfuzzer_sys::fuzz_target!(|data: &[u8]| udapl::fuzz::conf_file(data));
