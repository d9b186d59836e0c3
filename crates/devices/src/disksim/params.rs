//! DiskSim's parameter file syntax (`.parv`, `.diskspecs`, `.model`), parsed into a
//! tree of blocks with the file and line of every value.
//!
//! The syntax, as DiskSim 4's manual describes it: a file is a sequence of top-level
//! items — `TYPE NAME { key = value, ... }` blocks, `source FILE` (textual include),
//! `instantiate [ names ] as TYPE-NAME` and `topology ...` trees. Keys are free text
//! up to `=` (`Segment size (in blks)`); a value is a number or word, a nested block
//! `TYPE { ... }`, a list `[ v, v, ... ]`, or `source FILE` (a block read from another
//! file). `#` starts a comment. Every error carries `file:line`.

use std::fmt;
use std::path::{Path, PathBuf};

/// A place in a parameter file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// File name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A problem in a DiskSim parameter file (or a file it refers to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskSimError {
    /// Where, when the problem is tied to a place.
    pub loc: Option<Loc>,
    /// What is wrong.
    pub msg: String,
}

impl DiskSimError {
    /// An error at `loc`.
    pub fn at(loc: &Loc, msg: impl Into<String>) -> DiskSimError {
        DiskSimError {
            loc: Some(loc.clone()),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for DiskSimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.loc {
            Some(l) => write!(f, "{l}: {}", self.msg),
            None => write!(f, "{}", self.msg),
        }
    }
}

impl std::error::Error for DiskSimError {}

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A number or a bare word.
    Word(String, Loc),
    /// A nested block.
    Block(Block),
    /// A list.
    List(Vec<Val>, Loc),
    /// `source FILE`.
    Source(String, Loc),
}

impl Val {
    /// Where the value starts.
    pub fn loc(&self) -> &Loc {
        match self {
            Val::Word(_, l) | Val::List(_, l) | Val::Source(_, l) => l,
            Val::Block(b) => &b.loc,
        }
    }
    /// A short rendering for listings.
    pub fn brief(&self) -> String {
        match self {
            Val::Word(w, _) => w.clone(),
            Val::Block(b) => format!("{} {{...}}", b.kind),
            Val::List(v, _) => format!("[{} items]", v.len()),
            Val::Source(f, _) => format!("source {f}"),
        }
    }
}

/// `key = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Key, inner whitespace collapsed.
    pub key: String,
    /// Value.
    pub val: Val,
    /// Where the key is.
    pub loc: Loc,
}

/// A block: `TYPE [NAME] { params }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Type (`disksim_disk`, `dm_layout_g1_zone`, ...).
    pub kind: String,
    /// Name, for top-level blocks.
    pub name: Option<String>,
    /// Parameters in file order.
    pub params: Vec<Param>,
    /// Where the block starts.
    pub loc: Loc,
}

impl Block {
    /// The parameter called `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key.eq_ignore_ascii_case(key))
    }
}

/// A parsed file: its top-level blocks and instantiations (after `source` includes).
#[derive(Clone, Debug, Default)]
pub struct ParamFile {
    /// Top-level blocks.
    pub blocks: Vec<Block>,
    /// `instantiate [ names ] as TYPE`: (names, type name).
    pub instances: Vec<(Vec<String>, String)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    LOpen,
    LClose,
    Comma,
    Eq,
    Word(String),
}

fn lex(file: &str, text: &str) -> Vec<(Tok, Loc)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let loc = Loc {
            file: file.to_string(),
            line: i + 1,
        };
        let line = match raw.find('#') {
            Some(k) => &raw[..k],
            None => raw,
        };
        let mut word = String::new();
        let flush = |w: &mut String, out: &mut Vec<(Tok, Loc)>| {
            if !w.is_empty() {
                out.push((Tok::Word(std::mem::take(w)), loc.clone()));
            }
        };
        for c in line.chars() {
            let t = match c {
                '{' => Some(Tok::Open),
                '}' => Some(Tok::Close),
                '[' => Some(Tok::LOpen),
                ']' => Some(Tok::LClose),
                ',' => Some(Tok::Comma),
                '=' => Some(Tok::Eq),
                c if c.is_whitespace() => {
                    flush(&mut word, &mut out);
                    None
                }
                c => {
                    word.push(c);
                    None
                }
            };
            if let Some(t) = t {
                flush(&mut word, &mut out);
                out.push((t, loc.clone()));
            }
        }
        flush(&mut word, &mut out);
    }
    out
}

struct Parser<'a> {
    toks: Vec<(Tok, Loc)>,
    i: usize,
    file: &'a str,
    eof: Loc,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Open => "'{'".into(),
        Tok::Close => "'}'".into(),
        Tok::LOpen => "'['".into(),
        Tok::LClose => "']'".into(),
        Tok::Comma => "','".into(),
        Tok::Eq => "'='".into(),
        Tok::Word(w) => format!("'{w}'"),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }
    fn loc(&self) -> Loc {
        self.toks
            .get(self.i)
            .map(|t| t.1.clone())
            .unwrap_or_else(|| self.eof.clone())
    }
    fn next(&mut self) -> Option<(Tok, Loc)> {
        let t = self.toks.get(self.i).cloned();
        self.i += 1;
        t
    }
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, DiskSimError> {
        Err(DiskSimError::at(&self.loc(), msg))
    }
    fn expect(&mut self, want: Tok, what: &str) -> Result<Loc, DiskSimError> {
        match self.next() {
            Some((t, l)) if t == want => Ok(l),
            Some((t, l)) => Err(DiskSimError::at(
                &l,
                format!("syntax error: expected {what}, found {}", describe(&t)),
            )),
            None => Err(DiskSimError::at(
                &self.eof,
                format!("syntax error: expected {what}, found end of file"),
            )),
        }
    }
    fn word(&mut self, what: &str) -> Result<(String, Loc), DiskSimError> {
        match self.next() {
            Some((Tok::Word(w), l)) => Ok((w, l)),
            Some((t, l)) => Err(DiskSimError::at(
                &l,
                format!("syntax error: expected {what}, found {}", describe(&t)),
            )),
            None => Err(DiskSimError::at(
                &self.eof,
                format!("syntax error: expected {what}, found end of file"),
            )),
        }
    }

    /// `{ params }` after the type (and name) words.
    fn block_body(
        &mut self,
        kind: String,
        name: Option<String>,
        loc: Loc,
    ) -> Result<Block, DiskSimError> {
        self.expect(Tok::Open, "'{'")?;
        let mut params = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Close) => {
                    self.i += 1;
                    break;
                }
                Some(Tok::Comma) => {
                    self.i += 1;
                }
                Some(Tok::Word(_)) => {
                    let kloc = self.loc();
                    let mut key = Vec::new();
                    while let Some(Tok::Word(w)) = self.peek() {
                        key.push(w.clone());
                        self.i += 1;
                    }
                    if self.peek() != Some(&Tok::Eq) {
                        return Err(DiskSimError::at(
                            &kloc,
                            format!(
                                "syntax error: expected '=' after '{}' in block '{kind}'",
                                key.join(" ")
                            ),
                        ));
                    }
                    self.i += 1;
                    let val = self.value()?;
                    params.push(Param {
                        key: key.join(" "),
                        val,
                        loc: kloc,
                    });
                    match self.peek() {
                        Some(Tok::Comma) | Some(Tok::Close) => {}
                        Some(t) => {
                            let t = describe(t);
                            return self.err(format!(
                                "syntax error: expected ',' or '}}' after a value, found {t}"
                            ));
                        }
                        None => {
                            return Err(DiskSimError::at(
                                &loc,
                                format!("syntax error: block '{kind}' is not closed"),
                            ))
                        }
                    }
                }
                Some(t) => {
                    let t = describe(t);
                    return self.err(format!(
                        "syntax error: expected a parameter name, found {t}"
                    ));
                }
                None => {
                    return Err(DiskSimError::at(
                        &loc,
                        format!("syntax error: block '{kind}' is not closed"),
                    ))
                }
            }
        }
        Ok(Block {
            kind,
            name,
            params,
            loc,
        })
    }

    fn value(&mut self) -> Result<Val, DiskSimError> {
        match self.next() {
            Some((Tok::LOpen, l)) => {
                let mut items = Vec::new();
                loop {
                    match self.peek() {
                        Some(Tok::LClose) => {
                            self.i += 1;
                            break;
                        }
                        Some(Tok::Comma) => self.i += 1,
                        None => {
                            return Err(DiskSimError::at(&l, "syntax error: list is not closed"))
                        }
                        _ => items.push(self.value()?),
                    }
                }
                Ok(Val::List(items, l))
            }
            Some((Tok::Word(w), l)) => {
                if w == "source" {
                    if let Some(Tok::Word(_)) = self.peek() {
                        let (f, _) = self.word("a file name")?;
                        return Ok(Val::Source(f, l));
                    }
                }
                if self.peek() == Some(&Tok::Open) {
                    return Ok(Val::Block(self.block_body(w, None, l)?));
                }
                Ok(Val::Word(w, l))
            }
            Some((t, l)) => Err(DiskSimError::at(
                &l,
                format!("syntax error: expected a value, found {}", describe(&t)),
            )),
            None => Err(DiskSimError::at(
                &self.eof,
                "syntax error: expected a value, found end of file",
            )),
        }
    }

    /// Skip a balanced `[ ... ]` (topology trees).
    fn skip_brackets(&mut self) -> Result<(), DiskSimError> {
        let l = self.expect(Tok::LOpen, "'['")?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Some((Tok::LOpen, _)) => depth += 1,
                Some((Tok::LClose, _)) => depth -= 1,
                Some(_) => {}
                None => return Err(DiskSimError::at(&l, "syntax error: '[' is not closed")),
            }
        }
        Ok(())
    }
}

/// Read and parse `path`, following top-level `source` includes (relative to the
/// including file's directory).
pub fn parse_file(path: &Path) -> Result<ParamFile, DiskSimError> {
    let mut out = ParamFile::default();
    parse_into(path, &mut out, 0)?;
    Ok(out)
}

fn read(path: &Path, from: Option<&Loc>) -> Result<String, DiskSimError> {
    std::fs::read_to_string(path).map_err(|e| DiskSimError {
        loc: from.cloned(),
        msg: format!("cannot read {}: {e}", path.display()),
    })
}

/// Resolve `name` relative to the directory of `base`.
pub fn relative(base: &Path, name: &str) -> PathBuf {
    match base.parent() {
        Some(d) => d.join(name),
        None => PathBuf::from(name),
    }
}

fn parse_into(path: &Path, out: &mut ParamFile, depth: usize) -> Result<(), DiskSimError> {
    let text = read(path, None)?;
    parse_text_into(path, &text, out, depth)
}

/// Parse `text` as the contents of `path` (includes resolved relative to it).
pub fn parse_text(path: &Path, text: &str) -> Result<ParamFile, DiskSimError> {
    let mut out = ParamFile::default();
    parse_text_into(path, text, &mut out, 0)?;
    Ok(out)
}

fn parse_text_into(
    path: &Path,
    text: &str,
    out: &mut ParamFile,
    depth: usize,
) -> Result<(), DiskSimError> {
    let file = path.display().to_string();
    let toks = lex(&file, text);
    let eof = Loc {
        file: file.clone(),
        line: text.lines().count().max(1),
    };
    let mut p = Parser {
        toks,
        i: 0,
        file: &file,
        eof,
    };
    let _ = p.file;
    while p.peek().is_some() {
        let (w, l) = p.word("a block type, 'source', 'instantiate' or 'topology'")?;
        match w.as_str() {
            "source" => {
                let (f, fl) = p.word("a file name after 'source'")?;
                if depth > 16 {
                    return Err(DiskSimError::at(&fl, "'source' nested too deeply"));
                }
                let sub = relative(path, &f);
                let text = read(&sub, Some(&fl))?;
                parse_text_into(&sub, &text, out, depth + 1)?;
            }
            "instantiate" => {
                p.expect(Tok::LOpen, "'[' after 'instantiate'")?;
                let mut names = Vec::new();
                loop {
                    match p.next() {
                        Some((Tok::Word(n), _)) => names.push(n),
                        Some((Tok::Comma, _)) => {}
                        Some((Tok::LClose, _)) => break,
                        Some((t, tl)) => {
                            return Err(DiskSimError::at(
                                &tl,
                                format!("syntax error: expected a name, found {}", describe(&t)),
                            ))
                        }
                        None => {
                            return Err(DiskSimError::at(&l, "syntax error: '[' is not closed"))
                        }
                    }
                }
                let (as_, al) = p.word("'as'")?;
                if as_ != "as" {
                    return Err(DiskSimError::at(
                        &al,
                        format!("syntax error: expected 'as', found '{as_}'"),
                    ));
                }
                let (ty, _) = p.word("a type name after 'as'")?;
                out.instances.push((names, ty));
            }
            "topology" => {
                p.word("a component type")?;
                p.word("a component name")?;
                p.skip_brackets()?;
            }
            _ => {
                let (name, _) = p.word("a block name")?;
                let b = p.block_body(w, Some(name), l)?;
                out.blocks.push(b);
            }
        }
    }
    Ok(())
}

/// Parse a `source`d file that holds one block of type `kind` and return it.
pub fn parse_block_file(path: &Path, kind: &str, from: &Loc) -> Result<Block, DiskSimError> {
    let text = read(path, Some(from))?;
    let f = parse_text(path, &text)?;
    f.blocks
        .into_iter()
        .find(|b| b.kind == kind)
        .ok_or_else(|| DiskSimError {
            loc: Some(Loc {
                file: path.display().to_string(),
                line: 1,
            }),
            msg: format!("no '{kind}' block in this file"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_lists_and_keys_with_spaces() {
        let t = "# c\ndisksim_disk D {\n  Segment size (in blks) = 64,\n  Model = dm_x { A = [ 1, 2 ], B = w },\n  S = source f.model\n}\ninstantiate [ d0 ] as D\n";
        let f = parse_text(Path::new("x.parv"), t).unwrap();
        let b = &f.blocks[0];
        assert_eq!(b.kind, "disksim_disk");
        assert_eq!(b.get("segment size (in blks)").unwrap().loc.line, 3);
        assert!(matches!(b.get("Model").unwrap().val, Val::Block(_)));
        assert!(matches!(b.get("S").unwrap().val, Val::Source(..)));
        assert_eq!(f.instances, vec![(vec!["d0".to_string()], "D".to_string())]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e =
            parse_text(Path::new("x.parv"), "disksim_disk D {\n a = 1,\n b 2\n}\n").unwrap_err();
        assert_eq!(e.loc.as_ref().unwrap().line, 3, "{e}");
        assert!(e.to_string().starts_with("x.parv:3: syntax error"), "{e}");
        let e = parse_text(Path::new("x.parv"), "disksim_disk D {\n a = 1,\n").unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
    }
}
