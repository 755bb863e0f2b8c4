//! The layering of `fedns-dnsserver`, `fedns-providers`, `fedns-controller`
//! and of the test world's crates, `fedns-loopback`, `fedns-kube-emulator`
//! and `fedns-standins` (described in docs/architecture.md): no import
//! circle between files, each folder depends only on the folders below it,
//! each crate only on the crates below it; in the test world's crates no
//! file over 600 lines; and the `fedns sandbox` command's code where its
//! name says.
//!
//! The check reads the sources as text, the way a reader follows them:
//! every `crate::…`, `super::…` and `self::…` path (in `use` trees and
//! inline, tests included) is resolved to the file that defines it,
//! following `use` re-exports, and becomes an edge between two files. A
//! `mod.rs` or `lib.rs` *is* its folder: what it says about its own
//! descendants (`mod x;`, `pub use x::Y;`) is the folder's contents, not a
//! dependency, so those edges are left out. Everything else counts.
//!
//! It needs no parser crate: comments, strings and character literals are
//! blanked out, and the few token shapes a path can take are matched. A
//! path reached through a local alias (`use super::x; x::f()`) is seen at
//! its `use`, which is enough for a dependency graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path (`[]` for `lib.rs`, `["zone"]` for
/// `zone/mod.rs`, `["zone", "tree"]` for `zone/tree.rs`) and whether it is
/// a folder's own file (`lib.rs`/`mod.rs`).
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    is_folder: bool,
    text: String,
}

/// A crate's files keyed by module path.
struct Crate {
    files: BTreeMap<Vec<String>, SourceFile>,
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    Other,
}

/// Blanks comments, string, raw-string and character literals, keeping
/// everything else; lifetimes (`'a`) are kept as they are.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
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
            out.push(b' ');
        } else if b[i] == b'r' && (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"')) && starts_token(b, i) {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && b[j + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push(b'"');
            out.push(b'"');
            i = j;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.extend_from_slice(b"\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                // Multi-byte UTF-8 character literal, or a lifetime.
                let end = (i + 6).min(b.len());
                b[i + 1..end]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 1 + p)
                    .filter(|&p| std::str::from_utf8(&b[i + 1..p]).is_ok_and(|s| s.chars().count() == 1))
            };
            match close {
                Some(end) => {
                    out.extend_from_slice(b"' '");
                    i = end + 1;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether position `i` starts a token: nothing of an identifier before it
/// but a `b` prefix (`br"…"`).
fn starts_token(b: &[u8], i: usize) -> bool {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    i == 0 || !ident(b[i - 1]) || (b[i - 1] == b'b' && (i < 2 || !ident(b[i - 2])))
}

fn tokens(text: &str) -> Vec<Token> {
    let text = strip(text);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(text[start..i].to_string()));
            continue;
        }
        if b[i..].starts_with(b"::") {
            out.push(Token::PathSep);
            i += 2;
            continue;
        }
        out.push(match c {
            b'{' => Token::Open,
            b'}' => Token::Close,
            b';' => Token::Semi,
            b',' => Token::Comma,
            b'*' => Token::Star,
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            _ => Token::Other,
        });
        i += 1;
    }
    out
}

/// What one file refers to: absolute module paths (each the full path as
/// written, e.g. `["zone", "tree", "Tree"]`), and the names its `use`
/// items bring into scope (`Tree` → `["zone", "tree", "Tree"]`).
#[derive(Default)]
struct References {
    paths: Vec<Vec<String>>,
    imports: BTreeMap<String, Vec<String>>,
    glob_imports: Vec<Vec<String>>,
}

/// Makes a path written in module `here` absolute, or `None` when it does
/// not start at `crate`, `super` or `self` (an external crate, a local
/// alias, a child module of a folder file).
fn absolute(here: &[String], written: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String>;
    let mut rest = written;
    match written.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &written[1..];
        }
        Some("self") => {
            base = here.to_vec();
            rest = &written[1..];
        }
        Some("super") => {
            base = here.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Parses one `use` tree after its prefix: `a::b::{c, d::e as f, self, *}`.
/// Calls `leaf(path, alias)` for each leaf; `alias` is `None` for a glob.
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, leaf: &mut dyn FnMut(Vec<String>, Option<String>)) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Token::Ident(name)) if name == "as" => {
                *i += 1;
                if let Some(Token::Ident(alias)) = toks.get(*i) {
                    *i += 1;
                    leaf(path, Some(alias.clone()));
                }
                return;
            }
            Some(Token::Ident(name)) => {
                *i += 1;
                // `{self, …}` names the module the group is in.
                if name == "self" && !path.is_empty() {
                    if matches!(toks.get(*i), Some(Token::Ident(kw)) if kw == "as") {
                        continue;
                    }
                    let alias = path.last().cloned();
                    leaf(path, alias);
                    return;
                }
                path.push(name.clone());
                if toks.get(*i) == Some(&Token::PathSep) {
                    *i += 1;
                    continue;
                }
                if matches!(toks.get(*i), Some(Token::Ident(kw)) if kw == "as") {
                    continue;
                }
                let alias = path.last().cloned();
                leaf(path, alias);
                return;
            }
            Some(Token::Star) => {
                *i += 1;
                leaf(path, None);
                return;
            }
            Some(Token::Open) => {
                *i += 1;
                while *i < toks.len() && toks[*i] != Token::Close {
                    if toks[*i] == Token::Comma {
                        *i += 1;
                        continue;
                    }
                    use_tree(toks, i, path.clone(), leaf);
                }
                *i += 1;
                return;
            }
            _ => return,
        }
    }
}

/// Reads one file's references, tracking inline `mod name { … }` blocks so
/// that `super::` inside them resolves as the compiler does.
fn references(file: &SourceFile) -> References {
    let toks = tokens(&file.text);
    let mut refs = References::default();
    // (brace depth at which the inline module's block opened, its name)
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let here = |inline: &[(usize, String)]| -> Vec<String> {
        let mut m = file.module.clone();
        m.extend(inline.iter().map(|(_, n)| n.clone()));
        m
    };
    while i < toks.len() {
        match &toks[i] {
            Token::Open => {
                depth += 1;
                i += 1;
            }
            Token::Close => {
                if inline.last().is_some_and(|(d, _)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Token::Ident(kw) if kw == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) = (toks.get(i + 1), toks.get(i + 2)) {
                    inline.push((depth + 1, name.clone()));
                }
                i += 1;
            }
            Token::Ident(kw) if kw == "use" && (i == 0 || toks[i - 1] != Token::PathSep) => {
                i += 1;
                let module = here(&inline);
                let mut leaves = Vec::new();
                use_tree(&toks, &mut i, Vec::new(), &mut |path, alias| leaves.push((path, alias)));
                for (path, alias) in leaves {
                    let Some(abs) = absolute(&module, &path) else { continue };
                    match alias {
                        Some(alias) if inline.is_empty() => {
                            refs.imports.insert(alias, abs.clone());
                        }
                        None if inline.is_empty() => refs.glob_imports.push(abs.clone()),
                        _ => {}
                    }
                    refs.paths.push(abs);
                }
            }
            Token::Ident(first)
                if matches!(first.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1) == Some(&Token::PathSep)
                    && (i == 0 || toks[i - 1] != Token::PathSep) =>
            {
                let mut path = vec![first.clone()];
                i += 1;
                while toks.get(i) == Some(&Token::PathSep) {
                    match toks.get(i + 1) {
                        Some(Token::Ident(seg)) => {
                            path.push(seg.clone());
                            i += 2;
                        }
                        _ => break,
                    }
                }
                if let Some(abs) = absolute(&here(&inline), &path) {
                    refs.paths.push(abs);
                }
            }
            _ => i += 1,
        }
    }
    refs
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
                let path = entry.expect("directory entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                    continue;
                }
                let rel = path.strip_prefix(src).expect("below src");
                // `main.rs` is a binary's root: another crate, which uses the
                // library by its name, not by `crate::` paths.
                if rel == Path::new("main.rs") {
                    continue;
                }
                let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
                let last = module.pop().expect("a file name");
                let is_folder = last == "mod.rs" || (last == "lib.rs" && module.is_empty());
                if !is_folder {
                    module.push(last.trim_end_matches(".rs").to_string());
                }
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                files.insert(
                    module.clone(),
                    SourceFile {
                        path,
                        module,
                        is_folder,
                        text,
                    },
                );
            }
        }
        Crate { files }
    }

    /// The file that defines what `path` names: the longest module prefix,
    /// then through that file's `use` items while the next segment is a
    /// name it imports (re-exports are imports too).
    fn resolve(
        &self,
        path: &[String],
        imports: &BTreeMap<Vec<String>, References>,
        hops: usize,
    ) -> Option<Vec<String>> {
        let mut len = path.len();
        while len > 0 && !self.files.contains_key(&path[..len]) {
            len -= 1;
        }
        let module = path[..len].to_vec();
        if hops < 8 {
            if let Some(next) = path.get(len) {
                if let Some(target) = imports.get(&module).and_then(|r| r.imports.get(next)) {
                    if target.as_slice() != path {
                        let mut through = target.clone();
                        through.extend(path[len + 1..].iter().cloned());
                        if let Some(found) = self.resolve(&through, imports, hops + 1) {
                            return Some(found);
                        }
                    }
                }
            }
        }
        Some(module)
    }

    /// File-level edges (module path → module paths it depends on).
    fn edges(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        let refs: BTreeMap<Vec<String>, References> =
            self.files.iter().map(|(m, f)| (m.clone(), references(f))).collect();
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, file) in &self.files {
            let out = edges.entry(module.clone()).or_default();
            for path in &refs[module].paths {
                let Some(target) = self.resolve(path, &refs, 0) else {
                    continue;
                };
                let inside = file.is_folder && target.starts_with(module);
                if target != *module && !inside {
                    out.insert(target);
                }
            }
        }
        edges
    }

    fn name(&self, module: &[String]) -> String {
        self.files
            .get(module)
            .and_then(|f| {
                f.path
                    .to_str()
                    .and_then(|p| p.split("/src/").last())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| module.join("::"))
    }
}

/// Every cycle of the graph, one per strongly connected component of more
/// than one node (Tarjan), each printed as a path through it.
fn cycles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        on_stack: BTreeSet<N>,
        stack: Vec<N>,
        next: usize,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        s.index.insert(n.clone(), s.next);
        s.low.insert(n.clone(), s.next);
        s.next += 1;
        s.stack.push(n.clone());
        s.on_stack.insert(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if !s.index.contains_key(m) {
                visit(m, edges, s);
                let low = s.low[n].min(s.low[m]);
                s.low.insert(n.clone(), low);
            } else if s.on_stack.contains(m) {
                let low = s.low[n].min(s.index[m]);
                s.low.insert(n.clone(), low);
            }
        }
        if s.low[n] == s.index[n] {
            let mut component = Vec::new();
            while let Some(m) = s.stack.pop() {
                s.on_stack.remove(&m);
                let done = m == *n;
                component.push(m);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.reverse();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for n in edges.keys() {
        if !s.index.contains_key(n) {
            visit(n, edges, &mut s);
        }
    }
    s.found
}

/// The unit a file belongs to at the top of the crate: its top-level folder
/// (`zone`), or the file itself (`metrics`); `lib.rs` is `""`.
fn unit(module: &[String]) -> String {
    module.first().cloned().unwrap_or_default()
}

/// Unit → unit it depends on → one file-level edge that makes it so
/// (module path of the user, module path of what it uses).
type UnitEdges = BTreeMap<String, BTreeMap<String, (Vec<String>, Vec<String>)>>;

/// Edges between top-level units, with one file-level example per edge.
fn unit_edges(c: &Crate) -> UnitEdges {
    let mut out = UnitEdges::new();
    for (from, tos) in c.edges() {
        let a = unit(&from);
        for to in tos {
            let b = unit(&to);
            if a != b && !a.is_empty() && !b.is_empty() {
                out.entry(a.clone()).or_default().entry(b).or_insert((from.clone(), to));
            }
        }
    }
    out
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src")
}

/// Fails with every file-level cycle, and every top-level unit cycle.
fn assert_acyclic(c: &Crate, label: &str) {
    let edges = c.edges();
    let found = cycles(&edges);
    let described: Vec<String> = found
        .iter()
        .map(|cycle| cycle.iter().map(|m| c.name(m)).collect::<Vec<_>>().join(" → "))
        .collect();
    assert!(
        described.is_empty(),
        "{label}: files that import each other in a circle (each line is one strongly connected set):\n  {}",
        described.join("\n  ")
    );
    let units = unit_edges(c);
    let unit_graph: BTreeMap<String, BTreeSet<String>> = units
        .iter()
        .map(|(a, bs)| (a.clone(), bs.keys().cloned().collect()))
        .collect();
    let found = cycles(&unit_graph);
    let described: Vec<String> = found
        .iter()
        .map(|cycle| {
            let mut line = cycle.join(" → ");
            for (i, a) in cycle.iter().enumerate() {
                let b = &cycle[(i + 1) % cycle.len()];
                if let Some((from, to)) = units.get(a).and_then(|m| m.get(b)) {
                    line.push_str(&format!("\n    {a} → {b}: {} uses {}", c.name(from), c.name(to)));
                }
            }
            line
        })
        .collect();
    assert!(
        described.is_empty(),
        "{label}: folders that depend on each other:\n  {}",
        described.join("\n  ")
    );
}

/// Fails when a unit in `from` depends on a unit in `to`.
fn assert_never(c: &Crate, label: &str, from: &[&str], to: &[&str]) {
    let units = unit_edges(c);
    let mut bad = Vec::new();
    for a in from {
        for b in to {
            if let Some((f, t)) = units.get(*a).and_then(|m| m.get(*b)) {
                bad.push(format!("{a} → {b}: {} uses {}", c.name(f), c.name(t)));
            }
        }
    }
    assert!(bad.is_empty(), "{label}: layering broken:\n  {}", bad.join("\n  "));
}

/// The folder picture: for each pair of top-level units, how many
/// file-level edges lead from one to the other, one `from -> to: count` a
/// line. Printed by the crate tests (`--nocapture`) so a reader can see the
/// layering the assertions check.
fn picture(c: &Crate) -> String {
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (from, tos) in c.edges() {
        let a = unit(&from);
        for to in tos {
            let b = unit(&to);
            if a != b && !a.is_empty() && !b.is_empty() {
                *counts.entry((a.clone(), b)).or_default() += 1;
            }
        }
    }
    counts.iter().map(|((a, b), n)| format!("{a} -> {b}: {n}\n")).collect()
}

/// Fails when a unit depends on a unit that is not below it in `order`
/// (lowest first; units on one level, in one inner slice, may not use each
/// other either), or when a unit of the crate is missing from `order`.
fn assert_order(c: &Crate, label: &str, order: &[&[&str]]) {
    let level = |u: &str| order.iter().position(|l| l.contains(&u));
    let mut bad = Vec::new();
    for module in c.files.keys() {
        let u = unit(module);
        if !u.is_empty() && level(&u).is_none() {
            bad.push(format!("`{u}` ({}) has no place in the declared order", c.name(module)));
        }
    }
    for (a, bs) in unit_edges(c) {
        for (b, (f, t)) in bs {
            if let (Some(la), Some(lb)) = (level(&a), level(&b)) {
                if lb >= la {
                    bad.push(format!("{a} → {b}: {} uses {}", c.name(&f), c.name(&t)));
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(
        bad.is_empty(),
        "{label}: folders must depend only on folders below them:\n  {}",
        bad.join("\n  ")
    );
}

/// Each folder exists and its `mod.rs` opens with a `//!` doc saying what
/// it owns.
fn assert_folders(c: &Crate, label: &str, folders: &[&str]) {
    for folder in folders {
        let file = c
            .files
            .get(&vec![folder.to_string()])
            .filter(|f| f.is_folder)
            .unwrap_or_else(|| panic!("{label}: folder `{folder}/` (with a mod.rs) is missing"));
        assert!(
            file.text.trim_start().starts_with("//!"),
            "{label}: {} should open with a `//!` doc saying what the folder owns and what it may call",
            c.name(&file.module)
        );
    }
}

#[test]
fn dnsserver_has_no_import_circle_and_the_query_path_never_reaches_transfers() {
    let c = Crate::read(&crate_src("dnsserver"));
    assert_folders(&c, "fedns-dnsserver", &["zone", "query", "net", "xfr"]);
    assert_acyclic(&c, "fedns-dnsserver");
    assert_never(
        &c,
        "fedns-dnsserver: the zone model is below everything",
        &["zone"],
        &["query", "net", "xfr", "metrics"],
    );
    assert_never(
        &c,
        "fedns-dnsserver: the query path depends on the zone model, never on transfers or transports",
        &["query"],
        &["xfr", "net"],
    );
    assert_never(
        &c,
        "fedns-dnsserver: transfers are below the transports",
        &["xfr"],
        &["net"],
    );
    assert_never(
        &c,
        "fedns-dnsserver: metrics are below the query path, transfers and transports",
        &["metrics"],
        &["query", "xfr", "net"],
    );
}

#[test]
fn providers_has_no_import_circle_and_providers_never_use_each_other() {
    let c = Crate::read(&crate_src("providers"));
    let providers = ["embedded", "route53", "coredns_etcd", "google_clouddns"];
    assert_folders(
        &c,
        "fedns-providers",
        &[
            "source",
            "plan",
            "embedded",
            "route53",
            "coredns_etcd",
            "google_clouddns",
        ],
    );
    assert_acyclic(&c, "fedns-providers");
    for p in providers {
        let others: Vec<&str> = providers.iter().copied().filter(|o| *o != p).collect();
        assert_never(&c, "fedns-providers: one provider never uses another", &[p], &others);
    }
    assert_never(
        &c,
        "fedns-providers: the plan is below the providers and the source",
        &["plan"],
        &["source", "embedded", "route53", "coredns_etcd", "google_clouddns"],
    );
}

/// The controller, lowest first: leaf helpers that know nothing of the
/// rest (logging, the host client, the record work queue, the controller's
/// metrics and its HTTP endpoints); the member registry; data-plane health (probes, agents'
/// reports, quorum, hysteresis), which may read the members; the record
/// reconcilers, which read both; the member-side discovery replica, which
/// reads the records' model; the emulated federation; the command line,
/// which wires everything together.
const CONTROLLER_ORDER: &[&[&str]] = &[
    &["logging", "kube_client", "queue", "metrics", "events"],
    &["http"],
    &["members"],
    &["dataplane"],
    &["records"],
    &["discovery"],
    &["federation"],
    &["cli"],
];

#[test]
fn controller_has_no_import_circle_and_folders_depend_only_downward() {
    let c = Crate::read(&crate_src("controller"));
    println!(
        "fedns-controller folder edges (file-level edges per pair):\n{}",
        picture(&c)
    );
    assert_folders(
        &c,
        "fedns-controller",
        &["cli", "members", "dataplane", "records", "discovery"],
    );
    assert_acyclic(&c, "fedns-controller");
    assert_order(&c, "fedns-controller", CONTROLLER_ORDER);
}

/// The emulator, lowest first: `Status` errors; validation as
/// apiextensions-apiserver does it (CRDs, schemas, CEL), knowing nothing of
/// the store; the store (objects, verbs, the resources served,
/// selectors); the request path and seeding, which both write through the
/// store; the emulator that serves one cluster.
const KUBE_EMULATOR_ORDER: &[&[&str]] = &[
    &["status"],
    &["validation"],
    &["store"],
    &["api", "seed"],
    &["emulator"],
];

/// The stand-ins, lowest first: the vendored upstream CRDs and the
/// stand-ins that need nothing of each other; the Gateway API controller,
/// which installs the vendored Gateway API CRDs in its tests.
const STANDINS_ORDER: &[&[&str]] = &[
    &[
        "upstream_crds",
        "responder",
        "clouddns",
        "webhook_provider",
        "fleet",
        "eks_auth",
    ],
    &["gateway_controller"],
];

#[test]
fn loopback_has_no_import_circle() {
    let c = Crate::read(&crate_src("loopback"));
    assert_acyclic(&c, "fedns-loopback");
    assert_order(&c, "fedns-loopback", &[&["ports", "serve", "tls"]]);
}

#[test]
fn kube_emulator_has_no_import_circle_and_the_request_path_goes_down() {
    let c = Crate::read(&crate_src("kube-emulator"));
    println!(
        "fedns-kube-emulator folder edges (file-level edges per pair):\n{}",
        picture(&c)
    );
    assert_folders(&c, "fedns-kube-emulator", &["api", "store", "validation"]);
    assert_acyclic(&c, "fedns-kube-emulator");
    assert_order(&c, "fedns-kube-emulator", KUBE_EMULATOR_ORDER);
}

#[test]
fn standins_have_no_import_circle_and_never_use_each_other() {
    let c = Crate::read(&crate_src("standins"));
    println!(
        "fedns-standins folder edges (file-level edges per pair):\n{}",
        picture(&c)
    );
    assert_folders(&c, "fedns-standins", &["clouddns", "fleet"]);
    assert_acyclic(&c, "fedns-standins");
    assert_order(&c, "fedns-standins", STANDINS_ORDER);
}

/// The workspace's crates, lowest first; each may depend (in
/// `[dependencies]`) only on crates before it, and the test world's crates
/// on nothing of fedns's own. Dev-dependencies may reach further down the
/// list only: a product crate's tests may stand on the test world, never
/// the test world on a product crate.
const CRATES: &[(&str, &str)] = &[
    ("fedns-api", "crds"),
    ("fedns-loopback", "loopback"),
    ("fedns-kube-emulator", "kube-emulator"),
    ("fedns-standins", "standins"),
    ("fedns-dnsserver", "dnsserver"),
    ("fedns-providers", "providers"),
    ("fedns-controller", "controller"),
    ("fedns-e2e", "tests"),
];

/// The test world's crates: none may depend on a product crate.
const TEST_WORLD: &[&str] = &["fedns-loopback", "fedns-kube-emulator", "fedns-standins"];

/// `fedns-*` names a manifest's section lists, e.g. `[dependencies]`.
fn fedns_deps(manifest: &str, section: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == format!("[{section}]");
            continue;
        }
        if inside && line.starts_with("fedns-") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.push(name);
        }
    }
    out
}

#[test]
fn crates_depend_only_on_crates_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace manifest");
    let mut bad = Vec::new();
    for (i, (name, folder)) in CRATES.iter().enumerate() {
        assert!(
            workspace.contains(&format!("\"{folder}\"")),
            "{name} ({folder}/) is not a workspace member"
        );
        let manifest = std::fs::read_to_string(root.join(folder).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("reading {folder}/Cargo.toml: {e}"));
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "{folder}/Cargo.toml names another crate"
        );
        let below: Vec<&str> = CRATES[..i].iter().map(|(n, _)| *n).collect();
        for dep in fedns_deps(&manifest, "dependencies") {
            if !below.contains(&dep.as_str()) {
                bad.push(format!("{name} depends on {dep}, which is not below it"));
            }
            if TEST_WORLD.contains(name) && !TEST_WORLD.contains(&dep.as_str()) {
                bad.push(format!("{name} (the test world) depends on the product crate {dep}"));
            }
        }
        for dep in fedns_deps(&manifest, "dev-dependencies") {
            if TEST_WORLD.contains(name) && !TEST_WORLD.contains(&dep.as_str()) {
                bad.push(format!(
                    "{name} (the test world) dev-depends on the product crate {dep}"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "crates must depend only downwards:\n  {}",
        bad.join("\n  ")
    );
}

/// Files longer than this many lines hold several jobs or make a reader
/// scroll; the test world's crates keep under it (tests included).
const MAX_LINES: usize = 600;

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_file_in_the_test_world_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut long = Vec::new();
    for folder in ["loopback", "kube-emulator", "standins"] {
        for sub in ["src", "tests"] {
            for path in rust_files(&root.join(folder).join(sub)) {
                let lines = std::fs::read_to_string(&path).expect("a source file").lines().count();
                if lines > MAX_LINES {
                    let shown = path.strip_prefix(&root).unwrap_or(&path).display().to_string();
                    long.push(format!("{shown}: {lines} lines"));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by job):\n  {}",
        long.join("\n  ")
    );
}

/// `fedns sandbox` is found from its name: the only folder or crate named
/// `sandbox` is the command's (`controller/src/cli/sandbox/`, with its
/// flags in `cli/args/sandbox.rs`), and its `mod.rs` says so.
#[test]
fn the_sandbox_command_is_where_its_name_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut named = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a folder") {
            let path = entry.expect("directory entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if !path.is_dir() || name.starts_with('.') || name == "target" {
                continue;
            }
            if name.contains("sandbox") {
                named.push(path.strip_prefix(&root).unwrap_or(&path).display().to_string());
            }
            stack.push(path);
        }
    }
    named.sort();
    // examples/sandbox/ is the command's seed data, compiled in.
    assert_eq!(
        named,
        ["controller/src/cli/sandbox", "examples/sandbox"],
        "folders named for the sandbox command must be the command's"
    );
    let module = std::fs::read_to_string(root.join("controller/src/cli/sandbox/mod.rs")).expect("the command's module");
    assert!(
        module.starts_with("//! `fedns sandbox`"),
        "cli/sandbox/mod.rs opens with what the command is"
    );
    assert!(
        root.join("controller/src/cli/args/sandbox.rs").is_file(),
        "the command's flags"
    );
    for (name, _) in CRATES {
        assert!(
            !name.contains("sandbox"),
            "crate {name}: no crate is named for the command"
        );
    }
}

/// The checker itself, on small sources: it must see circles through
/// `use` trees, inline paths, `super::` from inline modules and
/// re-exports, and must not see one in a folder's own re-exports.
#[test]
fn the_checker_finds_circles_through_every_kind_of_path() {
    let file = |module: &[&str], is_folder: bool, text: &str| SourceFile {
        path: PathBuf::from(format!("src/{}.rs", module.join("/"))),
        module: module.iter().map(|s| s.to_string()).collect(),
        is_folder,
        text: text.to_string(),
    };
    let make = |files: Vec<SourceFile>| Crate {
        files: files.into_iter().map(|f| (f.module.clone(), f)).collect(),
    };
    // A folder that re-exports its children, whose children use each other
    // through the folder's re-export and through an inline path.
    let c = make(vec![
        file(&[], true, "mod zone; pub use zone::{Tree, Version};"),
        file(&["zone"], true, "//! zone\nmod tree; mod version; pub use self::{tree::Tree, version::Version};"),
        file(&["zone", "tree"], false, "use super::Version; pub struct Tree; // crate::zone::version in a comment"),
        file(&["zone", "version"], false, "pub struct Version; fn f() { let _ = \"crate::zone::tree\"; }\n#[cfg(test)] mod tests { fn g() -> super::super::tree::Tree { crate::zone::tree::Tree } }"),
    ]);
    let found = cycles(&c.edges());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].len(), 2);
    // The same without the test module: no circle, and the folder's own
    // re-exports are not one.
    let c = make(vec![
        file(&[], true, "mod zone; pub use zone::{Tree, Version};"),
        file(
            &["zone"],
            true,
            "//! zone\nmod tree; mod version; pub use self::{tree::Tree, version::Version};",
        ),
        file(
            &["zone", "tree"],
            false,
            "use super::{Version as V, self as z}; pub struct Tree;",
        ),
        file(
            &["zone", "version"],
            false,
            "pub struct Version<'a>(&'a str); const C: char = '{';",
        ),
    ]);
    assert!(cycles(&c.edges()).is_empty(), "{:?}", c.edges());
    assert_eq!(
        c.edges()[&vec!["zone".to_string(), "tree".to_string()]],
        BTreeSet::from([
            vec!["zone".to_string(), "version".to_string()],
            vec!["zone".to_string()]
        ])
    );
}
