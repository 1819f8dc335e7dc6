//! No import cycles between modules, in every crate of the workspace.
//!
//! Each `crate::`/`super::`/`self::` path in a source file (use statements
//! and paths in code; inline `#[cfg(test)]` modules and comments excluded)
//! is an edge from the file's module to the module the path names, through
//! `pub use` re-exports. An edge between two modules is lifted to the two
//! children of their closest common ancestor that contain them; edges to an
//! ancestor or a descendant are not dependencies between siblings. The
//! graph of siblings under every module must be acyclic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

struct Crate {
    /// Module path -> source text (comments and inline test modules removed).
    files: BTreeMap<Module, (PathBuf, String)>,
}

fn module_of(root: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut m: Module = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib")) {
        m.pop();
    }
    m
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            // Binaries are crates of their own.
            if p.file_name().is_some_and(|n| n != "bin") {
                rs_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text without comments, string and char literals, and without the
/// inline test module (everything from `#[cfg(test)]` followed by `mod`).
fn code_of(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x' or '\n'); lifetimes are left alone.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    // Drop inline test modules: `#[cfg(test)]` then `mod name {` up to its
    // closing brace (a test module in a file of its own is left out by `load`).
    let mut text = String::new();
    let mut lines = out.lines().peekable();
    while let Some(l) = lines.next() {
        let opens_test_mod = l.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|n| {
                let n = n.trim_start();
                n.starts_with("mod ") && n.trim_end().ends_with('{')
            });
        if opens_test_mod {
            let mut depth = 0i32;
            for m in lines.by_ref() {
                depth += m.matches('{').count() as i32 - m.matches('}').count() as i32;
                if depth <= 0 && m.contains('}') {
                    break;
                }
            }
            continue;
        }
        text.push_str(l);
        text.push('\n');
    }
    text
}

/// Names of the child modules `code` declares only for tests
/// (`#[cfg(test)]` followed by `mod name;`).
fn test_only_children(code: &str) -> Vec<String> {
    let lines: Vec<&str> = code.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| {
            let rest = w[1].strip_prefix("pub ").unwrap_or(w[1]);
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

fn load(root: &Path) -> Crate {
    let mut paths = Vec::new();
    rs_files(root, &mut paths);
    let mut files: BTreeMap<Module, (PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let code = code_of(&std::fs::read_to_string(&p).unwrap());
            (module_of(root, &p), (p, code))
        })
        .collect();
    // Test-only modules (and what is under them) are not part of the graph.
    let mut test_only = Vec::new();
    for (m, (p, _)) in &files {
        for child in test_only_children(&std::fs::read_to_string(p).unwrap()) {
            let mut c = m.clone();
            c.push(child);
            test_only.push(c);
        }
    }
    files.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    Crate { files }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path in `code` that starts with `crate`, `super` or `self`, with
/// `use` groups expanded (`use a::{b, c::d}` gives `a::b` and `a::c::d`).
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // Tokenise into identifiers and punctuation.
    let mut toks: Vec<String> = Vec::new();
    let cs: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        if is_ident(cs[i]) {
            let s = i;
            while i < cs.len() && is_ident(cs[i]) {
                i += 1;
            }
            toks.push(cs[s..i].iter().collect());
        } else if cs[i] == ':' && cs.get(i + 1) == Some(&':') {
            toks.push("::".into());
            i += 2;
        } else if !cs[i].is_whitespace() {
            toks.push(cs[i].to_string());
            i += 1;
        } else {
            i += 1;
        }
    }
    // Expands a use tree starting at toks[i] with prefix; returns the index after it.
    fn tree(
        toks: &[String],
        mut i: usize,
        prefix: Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) -> usize {
        let mut path = prefix;
        loop {
            match toks.get(i).map(String::as_str) {
                Some("{") => {
                    i += 1;
                    loop {
                        match toks.get(i).map(String::as_str) {
                            Some("}") => return i + 1,
                            Some(",") => i += 1,
                            None => return i,
                            _ => i = tree(toks, i, path.clone(), out),
                        }
                    }
                }
                Some(t) if t.chars().all(is_ident) => {
                    path.push(t.to_string());
                    i += 1;
                    if toks.get(i).map(String::as_str) == Some("::") {
                        i += 1;
                        continue;
                    }
                    if toks.get(i).map(String::as_str) == Some("as") {
                        i += 2;
                    }
                    out.push(path);
                    return i;
                }
                Some("*") => {
                    out.push(path);
                    return i + 1;
                }
                _ => {
                    out.push(path);
                    return i;
                }
            }
        }
    }
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        let starts_path = matches!(t, "crate" | "super" | "self")
            && toks.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || toks[i - 1] != "::");
        if starts_path {
            i = tree(&toks, i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// The module a path names, seen from `from` (following `pub use` re-exports
/// of the last module reached).
fn resolve(c: &Crate, from: &Module, path: &[String]) -> Option<Module> {
    let mut m: Module = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("super") | Some("self") => {
            m = from.clone();
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        m.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    for seg in rest {
        let mut next = m.clone();
        next.push(seg.clone());
        if c.files.contains_key(&next) {
            m = next;
            continue;
        }
        // A name re-exported by `m` from one of its children.
        if let Some((_, code)) = c.files.get(&m) {
            for p in paths_in(code) {
                if p.last() == Some(seg) {
                    let target = resolve(c, &m, &p[..p.len() - 1]);
                    if let Some(t) = target.filter(|t| t.starts_with(&m) && t.len() > m.len()) {
                        return Some(t);
                    }
                }
            }
            // `pub use child::Name;` written without `self::`.
            for line in code.lines() {
                let l = line.trim();
                if let Some(u) = l
                    .strip_prefix("pub use ")
                    .or_else(|| l.strip_prefix("pub(crate) use "))
                {
                    let first = u.split("::").next().unwrap_or("");
                    let mentions = u.split(|ch: char| !is_ident(ch)).any(|w| w == seg.as_str());
                    let mut child = m.clone();
                    child.push(first.to_string());
                    if mentions && c.files.contains_key(&child) {
                        return Some(child);
                    }
                }
            }
        }
        break;
    }
    Some(m)
}

/// Cycles among siblings: for each parent module, the strongly connected
/// components (size > 1) of its children's dependency graph.
fn cycles(c: &Crate) -> Vec<String> {
    // (parent, child_a, child_b) -> an example "file: path".
    let mut edges: BTreeMap<(Module, String, String), String> = BTreeMap::new();
    for (m, (file, code)) in &c.files {
        for p in paths_in(code) {
            let Some(t) = resolve(c, m, &p) else { continue };
            let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
            if common == m.len() || common == t.len() {
                continue; // an ancestor or a descendant
            }
            let parent = m[..common].to_vec();
            edges
                .entry((parent, m[common].clone(), t[common].clone()))
                .or_insert_with(|| format!("{}: {}", file.display(), p.join("::")));
        }
    }
    let mut parents: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (parent, a, b) in edges.keys() {
        parents
            .entry(parent.clone())
            .or_default()
            .entry(a.clone())
            .or_default()
            .insert(b.clone());
    }
    let mut found = Vec::new();
    for (parent, g) in &parents {
        // Reachability by repeated search (the graphs are small).
        let reach = |from: &String| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.clone()];
            while let Some(n) = todo.pop() {
                for x in g.get(&n).into_iter().flatten() {
                    if seen.insert(x.clone()) {
                        todo.push(x.clone());
                    }
                }
            }
            seen
        };
        let mut done = BTreeSet::new();
        for n in g.keys() {
            if done.contains(n) {
                continue;
            }
            let r = reach(n);
            if !r.contains(n) {
                continue;
            }
            let scc: BTreeSet<String> =
                r.iter().filter(|x| reach(x).contains(n)).cloned().collect();
            let mut why = Vec::new();
            for a in &scc {
                for b in &scc {
                    if let Some(e) = edges.get(&(parent.clone(), a.clone(), b.clone())) {
                        why.push(format!("    {a} -> {b} ({e})"));
                    }
                }
            }
            found.push(format!(
                "cycle under `{}`: {:?}\n{}",
                parent.join("::"),
                scc,
                why.join("\n")
            ));
            done.extend(scc);
        }
    }
    found
}

fn crate_roots() -> Vec<PathBuf> {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["src", "ffi/src", "tools/src", "abi/src"]
        .iter()
        .map(|r| ws.join(r))
        .filter(|p| p.is_dir())
        .collect()
}

#[test]
fn no_import_cycles_between_modules() {
    let mut all = Vec::new();
    for root in crate_roots() {
        for cy in cycles(&load(&root)) {
            all.push(format!("{}: {cy}", root.display()));
        }
    }
    assert!(all.is_empty(), "import cycles:\n{}", all.join("\n"));
}

#[test]
fn the_checker_finds_a_cycle_through_a_re_export() {
    let src = |s: &str| code_of(s);
    let mut files = BTreeMap::new();
    let m = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Module>();
    files.insert(
        m(&[]),
        (PathBuf::from("lib.rs"), src("pub mod a; pub mod b;")),
    );
    files.insert(
        m(&["a"]),
        (
            PathBuf::from("a/mod.rs"),
            src("mod x;\npub use x::Thing;\n"),
        ),
    );
    files.insert(
        m(&["a", "x"]),
        (
            PathBuf::from("a/x.rs"),
            src("use crate::b::{Other, more::{self}};\n"),
        ),
    );
    files.insert(
        m(&["b"]),
        (
            PathBuf::from("b.rs"),
            src("// crate::a::Thing\nfn f() -> crate::a::Thing {}\n"),
        ),
    );
    let c = Crate { files };
    let found = cycles(&c);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a -> b") && found[0].contains("b -> a"),
        "{}",
        found[0]
    );

    // Without the edge back there is no cycle (and the comment is not one).
    let mut c = c;
    c.files.insert(
        m(&["b"]),
        (PathBuf::from("b.rs"), src("// crate::a::Thing\n")),
    );
    assert!(cycles(&c).is_empty());
}
