//! The size rule of `crates/*/src`: no function over [`MAX_FN_LINES`] lines and no file over
//! [`MAX_FILE_LINES`] lines, a file's `#[cfg(test)] mod` aside. A reader takes in a function
//! at one screen and a file at one sitting; whatever grows past that is split by concept.
//!
//! The scan reads Rust text, not a syntax tree: a function starts at a line whose first word
//! (after `pub`, `const`, `unsafe`, `async` or `extern "C"`) is `fn`, and ends where its braces
//! balance. Braces inside strings, character literals and `//` comments do not count.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The longest function, in lines from its `fn` to its closing brace.
pub const MAX_FN_LINES: usize = 80;
/// The longest file, its tests aside.
pub const MAX_FILE_LINES: usize = 900;

/// Checks every `.rs` file under `crates/*/src`; an error lists every breach.
pub fn run(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    for krate in fs::read_dir(root.join("crates")).context("cannot list crates/")? {
        rust_files(&krate?.path().join("src"), &mut files)?;
    }
    files.sort();
    let mut breaches = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(file).display();
        breaches.extend(breaches_of(&text).into_iter().map(|b| format!("{shown}: {b}")));
    }
    if !breaches.is_empty() {
        bail!("code size: {} breach(es) of the size rule:\n  {}", breaches.len(), breaches.join("\n  "));
    }
    println!(
        "size: {} files in crates/*/src, no function over {MAX_FN_LINES} lines, no file over {MAX_FILE_LINES}",
        files.len()
    );
    Ok(())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(()) };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// What breaks the rule in one file's text: its length before its tests, then each long
/// function by name, line and length.
fn breaches_of(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines.get(i + 1).is_some_and(|l| l.trim_start().starts_with("mod "))
        })
        .unwrap_or(lines.len());
    let mut breaches = Vec::new();
    if end > MAX_FILE_LINES {
        breaches.push(format!("{end} lines before its tests (at most {MAX_FILE_LINES})"));
    }
    let mut i = 0;
    while i < end {
        if let Some(name) = fn_name(lines[i]) {
            if let Some(len) = body_lines(&lines[i..end]) {
                if len > MAX_FN_LINES {
                    breaches.push(format!(
                        "fn {name} at line {} has {len} lines (at most {MAX_FN_LINES})",
                        i + 1
                    ));
                }
            }
        }
        i += 1;
    }
    breaches
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("pub") {
        rest = r.trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        if let Some(r) = rest.strip_prefix(qualifier) {
            rest = r.trim_start();
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let name = rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next()?;
    (!name.is_empty()).then_some(name)
}

/// Lines from the first to where the braces opened after it balance; `None` for a declaration
/// without a body (a trait's method).
fn body_lines(lines: &[&str]) -> Option<usize> {
    let mut depth = 0i64;
    let mut opened = false;
    for (n, line) in lines.iter().enumerate() {
        let mut chars = line.chars().peekable();
        let mut in_str = false;
        while let Some(c) = chars.next() {
            match c {
                '\\' if in_str => {
                    chars.next();
                }
                '"' => in_str = !in_str,
                '/' if !in_str && chars.peek() == Some(&'/') => break,
                '\'' if !in_str => {
                    // A character literal ('{', '\''), or a lifetime, which has no closing quote.
                    let ahead: Vec<char> = chars.clone().take(3).collect();
                    match ahead.as_slice() {
                        ['\\', _, '\'', ..] => drop(chars.nth(2)),
                        [_, '\'', ..] => drop(chars.nth(1)),
                        _ => {}
                    }
                }
                '{' if !in_str => {
                    depth += 1;
                    opened = true;
                }
                '}' if !in_str => depth -= 1,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return Some(n + 1);
        }
        if !opened && line.trim_end().ends_with(';') {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_functions_with_their_qualifiers() {
        assert_eq!(fn_name("    pub(crate) const unsafe fn load<T>(x: T) {"), Some("load"));
        assert_eq!(fn_name("fn main() {"), Some("main"));
        assert_eq!(fn_name("    let fnord = 1;"), None);
        assert_eq!(fn_name("// fn commented()"), None);
    }

    #[test]
    fn braces_in_strings_and_characters_do_not_count() {
        let body =
            ["fn f() {", "    let s = \"{{\";", "    let c = '{';", "    let l: &'a str = s; // }", "}", "x"];
        assert_eq!(body_lines(&body), Some(5));
        assert_eq!(body_lines(&["fn f();", "{", "}"]), None);
    }

    #[test]
    fn a_long_function_and_a_long_file_are_breaches() {
        let long_fn = format!("fn big() {{\n{}}}\n", "    x();\n".repeat(MAX_FN_LINES));
        assert_eq!(breaches_of(&long_fn).len(), 1);
        let short_fn = format!("fn small() {{\n{}}}\n", "    x();\n".repeat(MAX_FN_LINES - 2));
        assert!(breaches_of(&short_fn).is_empty());
        let long_file =
            format!("{}#[cfg(test)]\nmod tests {{}}\n", "const A: u8 = 0;\n".repeat(MAX_FILE_LINES + 1));
        assert_eq!(breaches_of(&long_file).len(), 1);
        let tests_aside =
            format!("{}#[cfg(test)]\nmod tests;\n{}", "const A: u8 = 0;\n".repeat(10), "x\n".repeat(2000));
        assert!(breaches_of(&tests_aside).is_empty());
    }
}
