//! dat-info run for real against build/lib/libdat.so.1 (`make lib` first),
//! each time with its own dat.conf through DAT_OVERRIDE and a deadline.
//! Nothing here talks to the network: IAs are opened and queried, no
//! connection is made.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use dat_tools::ia::{self, OpenIa};
use dat_tools::sys::Dat;

/// How long one dat-info run may take (it needs milliseconds).
const DEADLINE: Duration = Duration::from_secs(60);

fn library() -> String {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../build/lib/libdat.so.1");
    assert!(
        Path::new(p).exists(),
        "{p} does not exist: run make lib first (the dat-info tests load it)"
    );
    p.to_string()
}

/// A directory removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("dat-info-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }

    /// Writes `text` as `name` in the directory; returns its path.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }
}

/// Runs dat-info with DAT_OVERRIDE=`conf` (and `--lib` the built library
/// unless `args` names one) on a host without RDMA ports, killing it if it
/// outlives the deadline.
fn dat_info(conf: &Path, args: &[&str]) -> Run {
    dat_info_on(conf, Path::new("/nonexistent/sysfs"), args)
}

/// As [`dat_info`], the RDMA ports read from the sysfs tree `sysfs`.
fn dat_info_on(conf: &Path, sysfs: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dat-info"));
    if !args.contains(&"--lib") {
        cmd.arg("--lib").arg(library());
    }
    cmd.args(args)
        .env("DAT_OVERRIDE", conf)
        .env("DAT_VERBS_SYSFS", sysfs)
        .env_remove("DAT_LIBRARY")
        .env_remove("DAT_LOG")
        .env_remove("DAT_DBG_TYPE")
        .env_remove("DAT_DBG_DEST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn dat-info");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).expect("read output");
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dat-info {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code().expect("exited, not killed"),
        stdout: out.join().expect("stdout thread"),
        stderr: err.join().expect("stderr thread"),
    }
}

/// The summary table row of `name` (first one).
fn row<'a>(run: &'a Run, name: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row for {name}:\n{}", run.stdout))
}

/// The JSON entries named `name`.
fn entries<'a>(json: &'a Value, name: &str) -> Vec<&'a Value> {
    json["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["ia_name"] == name)
        .collect()
}

const CONF: &str = "\
# dat-info test registry
ibd0  u1.2  nonthreadsafe  default  builtin      udapl.1.2  \"transport=tcp crc=on\"  \"\"
ibd1  u1.2  threadsafe     default  libdat.so.1  udapl.1.2  \"ack=local\"  \"plat\"

lo6   u1.2  nonthreadsafe  default  builtin      udapl.1.2  \"family=inet6\"  \"\"
";

#[test]
fn table_lists_tcp0_and_the_file_entries_with_file_and_line() {
    let dir = TempDir::new("table");
    let conf = dir.file("dat.conf", CONF);
    let r = dat_info(&conf, &["-d", "tcp0", "-d", "ibd0", "-d", "ibd1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stderr, "");
    let c = conf.display();
    assert!(r
        .stdout
        .contains(&format!("dat.conf: {c} ($DAT_OVERRIDE), 3 entries")));
    let ibd0 = row(&r, "ibd0");
    assert!(ibd0.contains(&format!("{c}:2")), "{ibd0}");
    assert!(
        ibd0.contains(" ok ") && ibd0.ends_with("127.0.0.1"),
        "{ibd0}"
    );
    assert!(row(&r, "ibd1").contains(&format!("{c}:3")));
    let tcp0 = row(&r, "tcp0");
    assert!(
        tcp0.contains("built-in") && tcp0.ends_with("127.0.0.1"),
        "{tcp0}"
    );
    assert!(!r.stdout.contains("lo6"), "-d limits the output");
    // Every attribute, by its C name, in the details.
    for field in [
        "adapter_name",
        "max_eps",
        "max_rdma_read_per_ep_out_guaranteed",
        "vendor_attr",
        "provider_name",
        "evd_stream_merging_supported",
        "provider_specific_attr",
    ] {
        assert!(
            r.stdout.lines().any(|l| l.trim_start().starts_with(field)),
            "{field} missing:\n{}",
            r.stdout
        );
    }
    // The options the opened IA reports, not the instance data re-read.
    assert!(r
        .stdout
        .contains("options           netdev=loopback crc=on ack=read fpdu=max"));
    // The full listing has the file entries first, then tcp0.
    let all = dat_info(&conf, &[]);
    let names: Vec<&str> = all
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("IA "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        &names[..5],
        ["ibd0", "ibd1", "lo6", "tcp0", "tcp0"],
        "{}",
        all.stdout
    );
}

#[test]
fn json_has_the_fields_and_the_values_the_library_reports() {
    let dir = TempDir::new("json");
    let conf = dir.file("dat.conf", CONF);
    let r = dat_info(
        &conf,
        &[
            "--json", "-d", "tcp0", "-d", "ibd0", "-d", "ibd1", "-d", "lo6",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["exit_code"], 0);
    assert_eq!(j["library"], library());
    let file = j["library_file"].as_str().expect("library_file");
    assert!(
        file.starts_with('/') && file.ends_with("/build/lib/libdat.so.1"),
        "{file}"
    );
    assert!(!file.contains("/../"), "{file}");
    assert_eq!(j["errors"], serde_json::json!([]));
    let c = conf.display().to_string();
    assert_eq!(j["dat_conf"]["path"], c.as_str());
    assert_eq!(j["dat_conf"]["from"], "DAT_OVERRIDE");
    assert_eq!(j["dat_conf"]["readable"], true);
    assert_eq!(j["dat_conf"]["problems"], serde_json::json!([]));

    // What the library itself says about tcp0.
    let dat = Dat::load(&library()).expect("load libdat");
    let key = ia::list_providers(&dat)
        .expect("list")
        .into_iter()
        .find(|k| k.name == b"tcp0" && !k.thread_safe)
        .expect("tcp0");
    let open = OpenIa::open(&dat, &key).expect("open tcp0");
    let (ia_attr, prov_attr) = open.query().expect("query tcp0");
    open.close().expect("close tcp0");

    let tcp0 = entries(&j, "tcp0");
    assert_eq!(tcp0.len(), 2, "both thread-safety values");
    let t = tcp0[0];
    assert_eq!(t["source"], "built-in");
    assert_eq!(t["file"], Value::Null);
    assert_eq!(t["line"], Value::Null);
    assert_eq!(t["provider"], "built-in");
    assert_eq!(t["is_thread_safe"], false);
    assert_eq!(
        (
            t["dapl_version_major"].as_u64(),
            t["dapl_version_minor"].as_u64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(t["opened"], true);
    assert_eq!(t["error"], Value::Null);
    assert_eq!(t["address"], "127.0.0.1");
    assert_eq!(t["address_family"], "inet");
    assert_eq!(t["transport"], "iwarp-tcp");
    assert_eq!(t["unavailable"], Value::Null);
    assert_eq!(t["options"]["netdev"], "loopback");
    assert_eq!(t["options"]["keepalive"], "10,2,5");
    assert_eq!(t["options"]["address"], Value::Null, "shown as address");
    let a = &t["ia_attr"];
    assert_eq!(a["adapter_name"], "tcp0");
    assert_eq!(a["ia_address_ptr"]["address"], "127.0.0.1");
    assert_eq!(a["max_eps"], ia_attr.max_eps);
    assert_eq!(a["max_evd_qlen"], ia_attr.max_evd_qlen);
    assert_eq!(a["max_message_size"], ia_attr.max_message_size);
    assert_eq!(a["vendor_name"], ia_attr.vendor_name.as_str());
    assert_eq!(
        a["max_rdma_read_per_ep_in_guaranteed"],
        ia_attr.max_rdma_read_per_ep_in_guaranteed
    );
    assert_eq!(a["transport_attr"], serde_json::json!([]));
    let p = &t["provider_attr"];
    assert_eq!(p["provider_name"], prov_attr.provider_name.as_str());
    assert_eq!(
        p["completion_flags_supported"],
        prov_attr.completion_flags_supported
    );
    assert_eq!(p["is_thread_safe"], false);
    assert_eq!(
        p["evd_stream_merging_supported"].as_array().map(Vec::len),
        Some(6)
    );
    // The library names its transport and options; transport and options
    // are those attributes.
    let named = p["provider_specific_attr"]
        .as_array()
        .expect("named attributes");
    assert_eq!(p["num_provider_specific_attr"], named.len());
    assert!(
        named
            .iter()
            .any(|a| a["name"] == "transport" && a["value"] == "iwarp-tcp"),
        "{named:?}"
    );
    for a in named {
        let (name, value) = (a["name"].as_str().expect("name"), &a["value"]);
        match name {
            "transport" => assert_eq!(&t["transport"], value),
            "address" => assert_eq!(&t["address"], value),
            _ => assert_eq!(&t["options"][name], value, "{name}"),
        }
    }
    assert_eq!(
        t["options"].as_object().map(|o| o.len()),
        Some(named.len() - 2)
    );
    assert_eq!(tcp0[1]["is_thread_safe"], true);
    assert_eq!(tcp0[1]["provider_attr"]["is_thread_safe"], true);

    let e = entries(&j, "ibd0")[0];
    assert_eq!(e["source"], "dat.conf");
    assert_eq!(e["file"], c.as_str());
    assert_eq!(e["line"], 2);
    assert_eq!(e["library"], "builtin");
    assert_eq!(e["provider_version"], "udapl.1.2");
    assert_eq!(e["instance_data"], "transport=tcp crc=on");
    assert_eq!(e["transport"], "iwarp-tcp");
    assert_eq!(e["options"]["crc"], "on");
    assert_eq!(e["provider_loads"], Value::Null);
    assert_eq!(e["opened"], true);
    assert_eq!(e["ia_attr"]["adapter_name"], "ibd0");

    let e = entries(&j, "ibd1")[0];
    assert_eq!(
        (e["line"].as_u64(), e["is_thread_safe"].as_bool()),
        (Some(3), Some(true))
    );
    assert_eq!(e["provider_attr"]["is_thread_safe"], true);
    assert_eq!(e["options"]["ack"], "local");
    assert_eq!(e["platform_data"], "plat");

    let e = entries(&j, "lo6")[0];
    assert_eq!(e["line"], 5);
    assert_eq!(e["address"], "::1");
    assert_eq!(e["address_family"], "inet6");
}

#[test]
fn verbose_adds_the_named_attributes() {
    let dir = TempDir::new("verbose");
    let conf = dir.file("dat.conf", CONF);
    let plain = dat_info(&conf, &["-d", "tcp0"]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(!plain.stdout.lines().any(|l| l.trim() == "named attributes"));
    assert!(plain
        .stdout
        .contains("as tcp0 (u1.2 nonthreadsafe) above, but is_thread_safe true"));
    let v = dat_info(&conf, &["-v", "-d", "tcp0"]);
    assert_eq!(v.code, 0, "{}", v.stderr);
    let named: Vec<&str> = v
        .stdout
        .lines()
        .skip_while(|l| l.trim() != "named attributes")
        .skip(1)
        .take(3)
        .collect();
    assert_eq!(named.len(), 3, "{}", v.stdout);
    assert!(named[0].trim_start().starts_with("provider_specific_attr"));
    assert!(
        named[0].ends_with("transport=iwarp-tcp"),
        "the library names its transport first: {named:?}"
    );
    assert!(named[1].trim() == "netdev=loopback", "{named:?}");
    // -v prints the thread-safe twin in full.
    assert_eq!(v.stdout.matches("  DAT_PROVIDER_ATTR").count(), 2);
}

/// Builds tests/fixtures/named_attr_provider.c, a provider library with
/// named attributes; None if there is no C compiler.
fn named_attr_provider(dir: &TempDir) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = dir.0.join("libnamed_attr_provider.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=gnu11", "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(root.join("tools/tests/fixtures/named_attr_provider.c"))
        .arg(format!("-I{}", root.join("include").display()))
        .arg(format!("-I{}", root.join("ctests/registry").display()))
        .arg(format!("-L{}", root.join("build/lib").display()))
        .arg("-ldat")
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("{cc} could not build the test provider: {s}"),
        Err(e) => {
            eprintln!("no C compiler ({cc}: {e}): provider library test skipped");
            None
        }
    }
}

#[test]
fn a_provider_library_is_loaded_and_its_named_attributes_shown() {
    let dir = TempDir::new("provider");
    let Some(lib) = named_attr_provider(&dir) else {
        return;
    };
    let conf = dir.file(
        "dat.conf",
        &format!(
            "# a third-party provider\nnamed0 u1.2 nonthreadsafe default {} fx.1.0 \"\" \"\"\n",
            lib.display()
        ),
    );
    let r = dat_info(&conf, &["-v", "-d", "named0"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(row(&r, "named0").contains(&format!("{}:2", conf.display())));
    assert!(row(&r, "named0").ends_with("fe80::1%1"));
    for text in [
        "provider          loads, exports dat_provider_init",
        "transport         the provider's",
        "vendor_name                          ctest-stub-vendor",
        "ia_address_ptr                       fe80::1%1 (inet6)",
        "provider_specific_attr               fixture=named_attr_provider",
        "                                     transport=none",
        "transport_attr                       mtu=4096",
        "vendor_attr                          vendor.quirk=x=1 y=2",
    ] {
        assert!(r.stdout.contains(text), "{text:?} missing:\n{}", r.stdout);
    }
    let j = dat_info(&conf, &["--json", "-d", "named0"]).json();
    let e = entries(&j, "named0")[0];
    assert_eq!(e["provider"], "library");
    assert_eq!(e["provider_loads"], true);
    assert_eq!(e["has_dat_provider_init"], true);
    assert_eq!(e["transport"], Value::Null);
    assert_eq!(e["address_family"], "inet6");
    assert_eq!(
        e["provider_attr"]["provider_specific_attr"][0],
        serde_json::json!({"name": "fixture", "value": "named_attr_provider"})
    );
    assert_eq!(e["ia_attr"]["num_vendor_attr"], 1);
}

#[test]
fn a_malformed_line_gives_file_and_line_and_exit_3() {
    let dir = TempDir::new("malformed");
    let conf = dir.file(
        "dat.conf",
        "# header\n\
         good0 u1.2 nonthreadsafe default builtin udapl.1.2 \"\" \"\"\n\
         broken line\n\
         bad1 u1.2 nonthreadsafe default builtin udapl.1.2 \"unterminated\n\
         bad2 u1.2 sometimes default builtin udapl.1.2 \"\" \"\"\n",
    );
    let r = dat_info(&conf, &["-d", "good0", "-d", "tcp0"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let c = conf.display();
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.stderr);
    assert!(
        lines[0].starts_with(&format!("dat-info: {c}:3: 2 fields where a record has 8")),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(&format!("dat-info: {c}:4: unterminated quoted field")),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with(&format!("dat-info: {c}:5: field 3 \"sometimes\"")),
        "{}",
        lines[2]
    );
    // The rest is still listed and opened.
    assert!(row(&r, "good0").contains(&format!("{c}:2")));
    assert!(row(&r, "good0").contains(" ok "));
    assert!(row(&r, "tcp0").contains(" ok "));
    let j = dat_info(&conf, &["--json", "-d", "good0"]).json();
    assert_eq!(j["exit_code"], 3);
    assert_eq!(j["dat_conf"]["problems"][0]["line"], 3);
    assert_eq!(j["dat_conf"]["problems"][0]["severity"], "error");
}

/// Instance data is the library's to judge (it logs what it ignores):
/// dat-info warns only about the dat.conf records themselves.
#[test]
fn warnings_name_the_line_but_keep_the_exit_status() {
    let dir = TempDir::new("warnings");
    let conf = dir.file(
        "dat.conf",
        "w0 u1.2 nonthreadsafe default builtin udapl.1.2 \"crc=maybe\" \"\"\n\
         w0 u1.2 nonthreadsafe default builtin udapl.1.2 \"\" \"\"\n\
         w2 u2.0 nonthreadsafe default builtin udapl.1.2 \"\" \"\"\n",
    );
    let r = dat_info(&conf, &["-d", "w0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c = conf.display();
    assert_eq!(
        r.stderr,
        format!(
            "dat-info: {c}:2: warning: w0 (u1.2 nonthreadsafe) repeats line 1: ignored (the first one wins)\n\
             dat-info: {c}:3: warning: w2 (u2.0 nonthreadsafe) is not in the library's registry: ignored \
             (the built-in provider implements DAT 1.2)\n"
        )
    );
}

#[test]
fn a_provider_library_that_does_not_load_gives_the_loaders_message_and_exit_1() {
    let dir = TempDir::new("noprovider");
    let conf = dir.file(
        "dat.conf",
        "vendor0 u1.2 nonthreadsafe default /nonexistent/libvendor0.so v.1.0 \"ib0 0\" \"\"\n",
    );
    let r = dat_info(&conf, &["-d", "vendor0", "-d", "tcp0"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let line = r.stderr.lines().next().unwrap_or("");
    assert!(
        line.starts_with(
            "dat-info: vendor0 (u1.2 nonthreadsafe): provider library /nonexistent/libvendor0.so \
             cannot be loaded: /nonexistent/libvendor0.so: "
        ),
        "{}",
        r.stderr
    );
    assert!(line.contains("No such file or directory"), "{line}");
    assert_eq!(r.stderr.lines().count(), 1);
    assert!(row(&r, "vendor0").contains("not loaded"));
    assert!(row(&r, "tcp0").contains(" ok "));
    let j = dat_info(&conf, &["--json", "-d", "vendor0"]).json();
    let e = entries(&j, "vendor0")[0];
    assert_eq!(e["provider"], "library");
    assert_eq!(e["provider_loads"], false);
    assert!(e["provider_error"]
        .as_str()
        .unwrap_or("")
        .contains("/nonexistent/libvendor0.so"));
    assert_eq!(e["opened"], false);
    assert_eq!(j["exit_code"], 1);
}

#[test]
fn an_ia_that_does_not_open_gives_the_dat_error_and_exit_1() {
    let dir = TempDir::new("noopen");
    let conf = dir.file(
        "dat.conf",
        "gone0 u1.2 nonthreadsafe default builtin udapl.1.2 \"netdev=no-such-if0\" \"\"\n",
    );
    let r = dat_info(&conf, &["-d", "gone0"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "dat-info: gone0 (u1.2 nonthreadsafe): cannot open: \
         DAT_INSUFFICIENT_RESOURCES: DAT_RESOURCE_DEVICE (0x80030003) \
         (is its network interface there, with an address?)\n"
    );
    assert!(row(&r, "gone0").contains(" unavailable "), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "status            unavailable: \
             DAT_INSUFFICIENT_RESOURCES: DAT_RESOURCE_DEVICE (0x80030003)"
        ),
        "{}",
        r.stdout
    );
    let j = dat_info(&conf, &["--json", "-d", "gone0"]).json();
    let e = entries(&j, "gone0")[0];
    assert_eq!(e["opened"], false);
    assert_eq!(
        e["unavailable"],
        "DAT_INSUFFICIENT_RESOURCES: DAT_RESOURCE_DEVICE"
    );
    assert!(
        r.stdout
            .contains("transport         not reported (the IA did not open)\n"),
        "{}",
        r.stdout
    );
    assert_eq!(e["transport"], Value::Null, "the instance data names none");
    assert_eq!(e["options"], Value::Null);
    assert_eq!(e["error_code"], "0x80030003");
    assert_eq!(e["ia_attr"], Value::Null);
}

/// The library refuses a transport it does not have (DAT_PROVIDER_NOT_FOUND,
/// named DAT_NAME_NOT_FOUND by dat_strerror); dat-info shows its error and
/// the transport the instance data asked for.
#[test]
fn a_transport_not_in_this_build_is_shown_unavailable_with_why() {
    let dir = TempDir::new("unavailable");
    let conf = dir.file(
        "dat.conf",
        "shm0 u1.2 nonthreadsafe default builtin udapl.1.2 \"transport=shm\" \"\"\n\
         ib0 u1.2 nonthreadsafe default builtin udapl.1.2 \"transport=verbs\" \"\"\n",
    );
    let r = dat_info(&conf, &["-d", "ib0"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let mine: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("dat-info:"))
        .collect();
    assert_eq!(
        mine,
        [
            "dat-info: ib0 (u1.2 nonthreadsafe): cannot open: DAT_NAME_NOT_FOUND (0x800a0000) \
             (its instance data asks for transport=verbs)"
        ],
        "{}",
        r.stderr
    );
    assert!(row(&r, "ib0").contains(" unavailable "), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "status            unavailable: transport=verbs: DAT_NAME_NOT_FOUND (0x800a0000)"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("transport         verbs\n"),
        "{}",
        r.stdout
    );
    let j = dat_info(&conf, &["--json", "-d", "shm0"]).json();
    let e = entries(&j, "shm0")[0];
    assert_eq!(e["opened"], false);
    assert_eq!(e["transport"], "shm");
    assert_eq!(e["unavailable"], "transport=shm: DAT_NAME_NOT_FOUND");
    assert_eq!(e["error"], "DAT_NAME_NOT_FOUND");
    assert_eq!(e["error_code"], "0x800a0000");
    assert_eq!(e["options"], Value::Null);
}

#[test]
fn an_unknown_device_is_an_error() {
    let dir = TempDir::new("unknown");
    let conf = dir.file("dat.conf", CONF);
    let r = dat_info(&conf, &["-d", "nosuch0"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, "dat-info: nosuch0: no such IA in the registry\n");
    let r = dat_info(&conf, &["-d", "tcp0", "-d", "nosuch0"]);
    assert_eq!(r.code, 1);
    assert!(row(&r, "tcp0").contains(" ok "));
    let r = dat_info(&conf, &["-l", "-d", "nosuch0"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stdout, "");
    assert_eq!(r.stderr, "dat-info: nosuch0: no such IA in the registry\n");
}

#[test]
fn list_prints_each_name_once() {
    let dir = TempDir::new("list");
    let conf = dir.file("dat.conf", CONF);
    let r = dat_info(&conf, &["-l"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let names: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(&names[..4], ["ibd0", "ibd1", "lo6", "tcp0"]);
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names);
    let r = dat_info(&conf, &["-l", "--json", "-d", "tcp0", "-d", "lo6"]);
    assert_eq!(r.json(), serde_json::json!(["lo6", "tcp0"]));
}

#[test]
fn an_unreadable_dat_conf_exits_3_and_the_built_in_ias_are_still_shown() {
    let dir = TempDir::new("unreadable");
    let missing = dir.0.join("missing.conf");
    let r = dat_info(&missing, &["-d", "tcp0"]);
    assert_eq!(r.code, 3);
    assert_eq!(
        r.stderr,
        format!(
            "dat-info: {}: cannot read dat.conf: No such file or directory\n",
            missing.display()
        )
    );
    assert!(row(&r, "tcp0").contains(" ok "));
}

#[test]
fn a_bogus_library_exits_4() {
    let dir = TempDir::new("boguslib");
    let conf = dir.file("dat.conf", CONF);
    let r = dat_info(&conf, &["--lib", "/nonexistent/libdat.so.1"]);
    assert_eq!(r.code, 4);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr
            .starts_with("dat-info: cannot load /nonexistent/libdat.so.1: "),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1);
    // Not a shared object at all.
    let c = conf.display().to_string();
    let r = dat_info(&conf, &["--lib", &c]);
    assert_eq!(r.code, 4, "{}", r.stderr);
}

#[test]
fn a_usage_error_exits_2() {
    let dir = TempDir::new("usage");
    let conf = dir.file("dat.conf", CONF);
    let r = dat_info(&conf, &["--no-such-option"]);
    assert_eq!(r.code, 2);
    let r = dat_info(&conf, &["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("Exit status"));
    assert!(r.stdout.contains("provider_specific_attr"));
}

/// A sysfs tree with one RDMA device, rxe0, its port 1 active and bound to
/// the loopback interface `lo`.
fn fake_sysfs(dir: &TempDir) -> PathBuf {
    let root = dir.0.join("sysfs");
    let port = root.join("class/infiniband/rxe0/ports/1");
    std::fs::create_dir_all(port.join("gid_attrs/ndevs")).expect("mkdir");
    for (file, text) in [
        (root.join("class/infiniband/rxe0/node_type"), "1: CA\n"),
        (root.join("class/infiniband/rxe0/parent"), "lo\n"),
        (port.join("state"), "4: ACTIVE\n"),
        (port.join("link_layer"), "Ethernet\n"),
        (port.join("gid_attrs/ndevs/0"), "lo\n"),
    ] {
        std::fs::write(file, text).expect("write");
    }
    root
}

#[test]
fn rdma_ports_are_listed_as_openib_ias() {
    let dir = TempDir::new("rdma");
    let conf = dir.file("dat.conf", "");
    let sysfs = fake_sysfs(&dir);
    let r = dat_info_on(&conf, &sysfs, &["-l"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let names: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(&names[..2], ["tcp0", "OpenIB-rxe0-1"], "{}", r.stdout);
    // Without RDMA ports, none.
    let r = dat_info(&conf, &["-l"]);
    assert!(!r.stdout.contains("OpenIB"), "{}", r.stdout);
    // rxe0 is not a device rdma-core knows here: the IA is shown
    // unavailable, with why.
    let r = dat_info_on(&conf, &sysfs, &["-d", "OpenIB-rxe0-1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        row(&r, "OpenIB-rxe0-1").contains(" unavailable "),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.lines().any(|l| l
            .starts_with("dat-info: OpenIB-rxe0-1 (u1.2 nonthreadsafe): cannot open: ")
            && l.contains("(an RDMA port: it needs rdma-core")),
        "{}",
        r.stderr
    );
}

#[test]
fn an_ofed_line_whose_library_does_not_load_is_served_by_the_built_in_provider() {
    let dir = TempDir::new("ofed");
    let conf = dir.file(
        "dat.conf",
        "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"lo 0\" \"\"\n",
    );
    // No RDMA port on lo: the built-in provider serves it over TCP.
    let r = dat_info(&conf, &["-d", "OpenIB-cma"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(row(&r, "OpenIB-cma").contains(" built-in "), "{}", r.stdout);
    assert!(row(&r, "OpenIB-cma").contains(" ok "), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("provider          built-in (served by libdat itself: OFED's library does not load: libdaplcma.so.1: "),
        "{}",
        r.stdout
    );
    let j = dat_info(&conf, &["--json", "-d", "OpenIB-cma"]).json();
    let e = entries(&j, "OpenIB-cma")[0];
    assert_eq!(e["provider"], "built-in");
    assert_eq!(e["provider_loads"], false);
    assert_eq!(e["opened"], true);
    assert_eq!(e["address"], "127.0.0.1");
    assert_eq!(j["exit_code"], 0);
}
