//! Profile files: parsing and validation.
//!
//! A profile is a small TOML document of top-level `key = value` lines (integers,
//! floats, strings, booleans; `#` comments; underscores in numbers), e.g.
//!
//! ```toml
//! name = "hdd-7200"
//! about = "generic 2 TB 7200 rpm SATA disk"
//! model = "hdd"
//! rpm = 7200
//! ```
//!
//! The text is parsed as TOML by `toml_edit` (the toml project's parser), whose
//! spans give every error its file and line; only documents of those value
//! types are accepted (no arrays or dates), with at most one level of tables
//! whose keys read as `table.key` (a zoned device's `[zoned]`). Host profiles
//! (`host::profile`) are read the same way. `model` selects the device model; the other
//! keys are that model's parameters (see `iosched devices`). Every key is checked:
//! an unknown key, a missing one, a value of the wrong type or out of range is an
//! error naming the field and its line.

use std::collections::HashSet;
use std::fmt;

/// A problem with a profile file.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileError {
    /// File name (or `<builtin NAME>`).
    pub file: String,
    /// 1-based line, when the problem is tied to one.
    pub line: Option<usize>,
    /// The field at fault, if any.
    pub field: Option<String>,
    /// What is wrong and what is expected.
    pub msg: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ": ")?;
        if let Some(k) = &self.field {
            write!(f, "field '{k}': ")?;
        }
        write!(f, "{}", self.msg)
    }
}

impl std::error::Error for ProfileError {}

/// A profile file's name (as errors show it) and text.
pub fn read_file(path: &std::path::Path) -> Result<(String, String), ProfileError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((file, text)),
        Err(e) => Err(ProfileError {
            file,
            line: None,
            field: None,
            msg: format!("cannot read: {e}"),
        }),
    }
}

/// A parsed value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Bool(_) => "a boolean",
        }
    }
}

/// The keys of one profile document, with their lines; readers mark keys as used so
/// that [`Doc::finish`] can reject unknown ones.
#[derive(Debug)]
pub struct Doc {
    file: String,
    entries: Vec<(String, Value, usize)>,
    used: HashSet<String>,
}

/// The 1-based line of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

/// A profile value from TOML's: integers, floats, strings, booleans.
fn value_of(item: &toml_edit::Item) -> Option<Value> {
    let v = item.as_value()?;
    Some(match v {
        toml_edit::Value::Integer(i) => Value::Int(*i.value()),
        toml_edit::Value::Float(f) if f.value().is_finite() => Value::Float(*f.value()),
        toml_edit::Value::String(s) => Value::Str(s.value().clone()),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        _ => return None,
    })
}

impl Doc {
    /// Parse `text` (TOML, by `toml_edit`, which keeps every key's span for
    /// the error lines), naming it `file` in errors. Profiles are flat: top-level
    /// `key = value` lines of integers, floats, strings and booleans.
    pub fn parse(file: &str, text: &str) -> Result<Doc, ProfileError> {
        let err = |at: usize, field: Option<String>, msg: String| ProfileError {
            file: file.to_string(),
            line: Some(line_of(text, at)),
            field,
            msg,
        };
        let doc = toml_edit::Document::parse(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            let msg = e.message().trim().replace('\n', " ");
            // The key of the line at fault, when it has one.
            let line = text
                .get(..at)
                .unwrap_or("")
                .rsplit('\n')
                .next()
                .unwrap_or("")
                .to_string()
                + text
                    .get(at..)
                    .unwrap_or("")
                    .split('\n')
                    .next()
                    .unwrap_or("");
            let field = line
                .split_once('=')
                .map(|(k, _)| k.trim().to_string())
                .filter(|k| {
                    !k.is_empty()
                        && k.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                });
            err(at, field, format!("syntax error: {msg}"))
        })?;
        let mut entries: Vec<(String, Value, usize)> = Vec::new();
        let span_of = |table: &toml_edit::Table, k: &str, item: &toml_edit::Item| {
            table
                .key(k)
                .and_then(|key| key.span())
                .or_else(|| item.span())
                .map_or(0, |s| s.start)
        };
        for (k, item) in doc.as_table().iter() {
            let at = span_of(doc.as_table(), k, item);
            if item.is_array_of_tables() {
                return Err(err(
                    at,
                    None,
                    format!("syntax error: '[{k}]': arrays of tables are not used in profiles"),
                ));
            }
            if let Some(table) = item.as_table() {
                // A table's keys are read as `table.key` (`[zoned]`).
                for (sub, sub_item) in table.iter() {
                    let sub_at = span_of(table, sub, sub_item);
                    let name = format!("{k}.{sub}");
                    if sub_item.is_table() || sub_item.is_array_of_tables() {
                        return Err(err(
                            sub_at,
                            Some(name.clone()),
                            format!("syntax error: '[{name}]': tables inside tables are not used in profiles"),
                        ));
                    }
                    let val = Self::value(text, sub_item)
                        .map_err(|m| err(sub_at, Some(name.clone()), m))?;
                    entries.push((name, val, line_of(text, sub_at)));
                }
                continue;
            }
            let val = Self::value(text, item).map_err(|m| err(at, Some(k.to_string()), m))?;
            entries.push((k.to_string(), val, line_of(text, at)));
        }
        entries.sort_by_key(|e| e.2);
        Ok(Doc {
            file: file.to_string(),
            entries,
            used: HashSet::new(),
        })
    }

    /// A profile value from a TOML item, or why it is not one.
    fn value(text: &str, item: &toml_edit::Item) -> Result<Value, String> {
        value_of(item).ok_or_else(|| {
            format!(
                "syntax error: '{}' is not a number, a \"string\" or true/false",
                item.span().and_then(|r| text.get(r)).unwrap_or("").trim()
            )
        })
    }

    /// Whether the document has a table `[name]` (keys `name.*`).
    pub fn has_table(&self, name: &str) -> bool {
        self.entries
            .iter()
            .any(|(k, _, _)| k.split_once('.').is_some_and(|(t, _)| t == name))
    }

    /// The file name used in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// An error about `field` (with its line, if present).
    pub fn err(&self, field: &str, msg: impl Into<String>) -> ProfileError {
        ProfileError {
            file: self.file.clone(),
            // A field that is missing has no line of its own: the error points at
            // the `model` line, which is what requires it.
            // A missing key of a table points at the table's first key.
            line: self
                .entries
                .iter()
                .find(|(k, _, _)| k == field)
                .or_else(|| {
                    let (table, _) = field.split_once('.')?;
                    self.entries
                        .iter()
                        .filter(|(k, _, _)| k.split_once('.').is_some_and(|(t, _)| t == table))
                        .min_by_key(|e| e.2)
                })
                .or_else(|| self.entries.iter().find(|(k, _, _)| k == "model"))
                .map(|e| e.2)
                .or(Some(1)),
            field: Some(field.to_string()),
            msg: msg.into(),
        }
    }

    fn get(&mut self, key: &str) -> Option<Value> {
        self.used.insert(key.to_string());
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|e| e.1.clone())
    }

    fn required(&mut self, key: &str) -> Result<Value, ProfileError> {
        self.get(key)
            .ok_or_else(|| self.err(key, "missing (every parameter must be given)"))
    }

    /// A string field.
    pub fn str(&mut self, key: &str) -> Result<String, ProfileError> {
        match self.required(key)? {
            Value::Str(s) => Ok(s),
            v => Err(self.err(key, format!("expected a string, got {}", v.kind()))),
        }
    }

    /// An optional string field.
    pub fn opt_str(&mut self, key: &str) -> Result<Option<String>, ProfileError> {
        if self.entries.iter().any(|(k, _, _)| k == key) {
            self.str(key).map(Some)
        } else {
            self.used.insert(key.to_string());
            Ok(None)
        }
    }

    /// A boolean field.
    pub fn bool(&mut self, key: &str) -> Result<bool, ProfileError> {
        match self.required(key)? {
            Value::Bool(b) => Ok(b),
            v => Err(self.err(key, format!("expected true or false, got {}", v.kind()))),
        }
    }

    /// An optional boolean field (`default` when absent).
    pub fn bool_or(&mut self, key: &str, default: bool) -> Result<bool, ProfileError> {
        if self.entries.iter().any(|(k, _, _)| k == key) {
            self.bool(key)
        } else {
            self.used.insert(key.to_string());
            Ok(default)
        }
    }

    /// An integer field within `lo..=hi`.
    pub fn int(&mut self, key: &str, lo: u64, hi: u64) -> Result<u64, ProfileError> {
        let v = match self.required(key)? {
            Value::Int(i) => i,
            v => {
                return Err(self.err(key, format!("expected an integer, got {}", v.kind())));
            }
        };
        if v < lo as i64 || (v as u64) > hi {
            return Err(self.err(key, format!("{v} is out of range: expected {lo} to {hi}")));
        }
        Ok(v as u64)
    }

    /// [`Doc::int`] for a field whose upper bound is a limit of ours or the kernel's
    /// rather than of the thing modelled: the message says why (`why`).
    pub fn int_limited(
        &mut self,
        key: &str,
        lo: u64,
        hi: u64,
        why: &str,
    ) -> Result<u64, ProfileError> {
        let v = self.int(key, lo, u64::MAX >> 1)?;
        if v > hi {
            return Err(self.err(
                key,
                format!("{v} is out of range: expected {lo} to {hi} ({why})"),
            ));
        }
        Ok(v)
    }

    /// An optional integer field within `lo..=hi`, `default` when absent.
    pub fn int_or(
        &mut self,
        key: &str,
        lo: u64,
        hi: u64,
        default: u64,
    ) -> Result<u64, ProfileError> {
        if self.entries.iter().any(|(k, _, _)| k == key) {
            self.int(key, lo, hi)
        } else {
            self.used.insert(key.to_string());
            Ok(default)
        }
    }

    /// A number that must be strictly positive (latencies, rates, times).
    pub fn pos(&mut self, key: &str) -> Result<f64, ProfileError> {
        let v = self.num(key)?;
        if v <= 0.0 {
            return Err(self.err(key, format!("{v} must be greater than zero")));
        }
        // Rates are divisors: below 1 kB/s one command would take longer than any
        // limit on time allows (and the division overflows); other positive numbers
        // stop at 10^-9 of their unit.
        let (min, why) = if key.ends_with("_mb_s") {
            (
                1e-3,
                "MB/s (1 kB/s: slower links take longer than 1000 s per command)",
            )
        } else {
            (1e-9, "(smaller values are no device's)")
        };
        if v < min {
            return Err(self.err(key, format!("{v} is out of range: at least {min:e} {why}")));
        }
        Ok(v)
    }

    /// A number that must be zero or more.
    pub fn nonneg(&mut self, key: &str) -> Result<f64, ProfileError> {
        let v = self.num(key)?;
        if v < 0.0 {
            return Err(self.err(key, format!("{v} must not be negative")));
        }
        Ok(v)
    }

    /// A number of either sign.
    pub fn signed(&mut self, key: &str) -> Result<f64, ProfileError> {
        self.num(key)
    }

    fn num(&mut self, key: &str) -> Result<f64, ProfileError> {
        let v = match self.required(key)? {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            v => return Err(self.err(key, format!("expected a number, got {}", v.kind()))),
        };
        // A time of more than 1000 s for one command is no device's, and keeping
        // every parameter there keeps every simulated instant far inside 64-bit
        // nanoseconds; other numbers (rates, factors) stop at 10^12.
        let (max, unit) = match key.rsplit('_').next() {
            Some("ns") => (1e12, "ns (1000 s: no command takes longer)"),
            Some("us") => (1e9, "us (1000 s: no command takes longer)"),
            Some("ms") => (1e6, "ms (1000 s: no command takes longer)"),
            _ => (1e12, "(larger values overflow the model's arithmetic)"),
        };
        if !v.is_finite() || v.abs() > max {
            return Err(self.err(key, format!("{v} is out of range: at most {max:e} {unit}")));
        }
        Ok(v)
    }

    /// Reject keys nobody read.
    pub fn finish(&self) -> Result<(), ProfileError> {
        for (k, _, _) in &self.entries {
            if !self.used.contains(k) {
                return Err(self.err(k, "unknown field for this model (see `iosched devices`)"));
            }
        }
        Ok(())
    }
}

/// ns from a value in ms.
pub(crate) fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// ns from a value in µs.
pub(crate) fn us_to_ns(us: f64) -> u64 {
    (us * 1e3).round() as u64
}

/// Format a float for `iosched devices` without noise.
pub(crate) fn fmt_num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A [`crate::ParamInfo`] row.
pub(crate) fn row(
    name: &'static str,
    unit: &'static str,
    value: impl ToString,
    help: &'static str,
) -> crate::ParamInfo {
    crate::ParamInfo {
        name,
        unit,
        value: value.to_string(),
        help,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_lines() {
        let mut d = Doc::parse(
            "f.toml",
            "# c\na = 1_000\nb = 2.5 # x\nc = \"s#t\"\nd = true\n",
        )
        .unwrap();
        assert_eq!(d.int("a", 0, 10_000).unwrap(), 1000);
        assert_eq!(d.pos("b").unwrap(), 2.5);
        assert_eq!(d.str("c").unwrap(), "s#t");
        assert!(d.bool("d").unwrap());
        d.finish().unwrap();
        let e = Doc::parse("f.toml", "a = 1\nb = oops\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.to_string()
                .starts_with("f.toml:2: field 'b': syntax error"),
            "{e}"
        );
        let mut d = Doc::parse("f.toml", "a = 0\nzz = 1\n").unwrap();
        let e = d.pos("a").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.toml:1: field 'a': 0 must be greater than zero"
        );
        assert!(d.finish().unwrap_err().to_string().contains("'zz'"));
    }
}
