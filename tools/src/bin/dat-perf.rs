//! dat-perf: latency, bandwidth and connection rate of a uDAPL (DAT 1.2)
//! library between two processes, beside plain TCP. See `dat-perf --help`.

fn main() -> std::process::ExitCode {
    dat_tools::perf::main()
}
