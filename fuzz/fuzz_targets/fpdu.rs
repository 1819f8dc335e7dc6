#![no_main]
// See src/fuzz.rs: udapl::fuzz::fpdu.
libfuzzer_sys::fuzz_target!(|data: &[u8]| udapl::fuzz::fpdu(data));
