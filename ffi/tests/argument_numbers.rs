//! `DAT_INVALID_ARGn` names the position of the invalid input in the C
//! prototype of the called function. The core names the input
//! (`udapl::error::Input`, by its parameter name); each entry point hands
//! its parameter names to the C boundary, which numbers it. This checks,
//! against `<dat/udat.h>`, that every entry point's Rust parameters and the
//! names it hands over are the prototype's, in order, and that every input
//! the core can name is a parameter of some prototype.

use std::collections::BTreeMap;
use std::path::Path;

use udapl::error::Input;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// Removes `/* … */` and `// …` comments.
fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
            out.push('\n');
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Name and parameter list (text between the parentheses) of every
/// `name(…)` whose name starts with `dat_` and whose list is followed by `;`.
fn header_prototypes() -> BTreeMap<String, Vec<String>> {
    let text = strip_comments(
        &std::fs::read_to_string(workspace().join("include/dat/udat.h")).expect("udat.h"),
    );
    let mut protos = BTreeMap::new();
    for decl in text.split(';') {
        let Some(open) = decl.find("dat_") else {
            continue;
        };
        let decl = &decl[open..];
        let Some((name, params)) = decl.split_once('(') else {
            continue;
        };
        let name = name.trim();
        if !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(params) = params.trim_end().strip_suffix(')') else {
            continue;
        };
        let names: Vec<String> = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "void")
            .map(|p| {
                p.rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        protos.insert(name.to_string(), names);
    }
    protos
}

struct EntryPoint {
    file: String,
    params: Vec<String>,
    body: String,
}

/// Every `extern "C" fn dat_*` in ffi/src/api: parameter names and body.
fn entry_points() -> BTreeMap<String, EntryPoint> {
    let mut out = BTreeMap::new();
    let dir = workspace().join("ffi/src/api");
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let text = strip_comments(&std::fs::read_to_string(&path).unwrap());
        for (i, _) in text.match_indices("extern \"C\" fn dat_") {
            let rest = &text[i + "extern \"C\" fn ".len()..];
            let (name, rest) = rest.split_once('(').unwrap();
            let (params, rest) = rest.split_once(')').unwrap();
            let params = params
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| p.split(':').next().unwrap().trim().to_string())
                .collect();
            let body_end = rest.find("\n}\n").unwrap_or(rest.len());
            out.insert(
                name.to_string(),
                EntryPoint {
                    file: path.file_name().unwrap().to_string_lossy().into_owned(),
                    params,
                    // One blank between tokens: formatting does not matter.
                    body: rest[..body_end]
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                },
            );
        }
    }
    out
}

/// The identifiers in a comma-separated list.
fn idents(list: &str) -> Vec<String> {
    list.split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The parameter lists an entry point hands to the C boundary: the slot
/// call of `entry!`, the literal lists of `code(…, &[…])` and
/// `error_code(…, &[…])`, and the `IA_OPEN_PARAMS` constant.
fn handed_over(body: &str) -> Vec<Vec<String>> {
    let mut lists = Vec::new();
    if let Some(i) = body.find("entry!(") {
        let slot = &body[i..];
        let call = slot.find("_func(").expect("entry! names a slot");
        let args = &slot[call + "_func(".len()..];
        lists.push(idents(&args[..args.find(')').unwrap()]));
    }
    for (i, _) in body.match_indices(", &[") {
        let list = &body[i + ", &[".len()..];
        lists.push(idents(&list[..list.find(']').unwrap()]));
    }
    if body.contains("&IA_OPEN_PARAMS") {
        let text = std::fs::read_to_string(workspace().join("ffi/src/api/ia.rs")).unwrap();
        let decl = &text[text.find("const IA_OPEN_PARAMS").unwrap()..];
        let list = &decl[decl.find("= [").unwrap() + 3..];
        lists.push(idents(&list[..list.find(']').unwrap()]));
    }
    lists
}

#[test]
fn every_entry_point_numbers_arguments_by_its_prototype() {
    let protos = header_prototypes();
    let eps = entry_points();
    assert_eq!(eps.len(), 72, "the 72 DAT 1.2 entry points");
    let mut problems = Vec::new();
    for (name, ep) in &eps {
        // dat_ia_open and dat_ia_close are macros over these in the header.
        let Some(proto) = protos.get(name) else {
            problems.push(format!("{name} ({}): no prototype in udat.h", ep.file));
            continue;
        };
        if &ep.params != proto {
            problems.push(format!(
                "{name} ({}): parameters {:?}, prototype {:?}",
                ep.file, ep.params, proto
            ));
        }
        let lists = handed_over(&ep.body);
        let numbers_errors = ep.body.contains("run(") || ep.body.contains("entry!(");
        if numbers_errors && lists.is_empty() {
            problems.push(format!(
                "{name} ({}): returns core errors but hands over no parameter names",
                ep.file
            ));
        }
        for l in lists {
            if &l != proto {
                problems.push(format!(
                    "{name} ({}): hands over {l:?}, prototype {proto:?}",
                    ep.file
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_input_is_a_parameter_of_some_prototype() {
    let protos = header_prototypes();
    for i in Input::ALL {
        assert!(
            protos.values().any(|p| p.iter().any(|n| n == i.c_name())),
            "{i:?} ({}) is no parameter of any prototype",
            i.c_name()
        );
    }
}

#[test]
fn the_header_parser_reads_a_known_prototype() {
    let protos = header_prototypes();
    assert_eq!(
        protos["dat_ep_post_rdma_read"],
        [
            "ep_handle",
            "num_segments",
            "local_iov",
            "user_cookie",
            "remote_iov",
            "completion_flags"
        ]
    );
    assert!(protos.len() >= 72, "{}", protos.len());
}
