//! The job-file (ini) front end, following fio's `__parse_jobs_ini`.

use super::builder::Builder;
use super::options::{find, JobState, OptDef};
use super::{FioError, FioInput, OutputOptions, SourceLocation};

/// Parses the text of a fio job file. `path_for_messages` is only used in
/// error messages and [`SourceLocation`]s. `${VAR}` references are expanded
/// from the process environment, as fio does.
pub fn parse_job_file(path_for_messages: &str, text: &str) -> Result<FioInput, FioError> {
    parse_job_file_with_env(path_for_messages, text, |name| std::env::var(name).ok())
}

/// Like [`parse_job_file`], but `${VAR}` references are looked up with `env`
/// (for deterministic tests and callers that sandbox the environment).
pub fn parse_job_file_with_env<F>(
    path_for_messages: &str,
    text: &str,
    env: F,
) -> Result<FioInput, FioError>
where
    F: Fn(&str) -> Option<String>,
{
    let path = path_for_messages;
    let mut b = Builder::default();
    let mut section: Option<Section> = None;

    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = strip_line(raw);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| {
                FioError::at_line(path, line_no, format!("malformed section header '{line}'"))
            })?;
            if name.is_empty() {
                return Err(FioError::at_line(path, line_no, "empty section name"));
            }
            if let Some(s) = section.take() {
                finish_section(&mut b, path, s, &env)?;
            }
            section = Some(Section {
                name: name.to_string(),
                line: line_no,
                opts: Vec::new(),
            });
            continue;
        }
        let Some(s) = section.as_mut() else {
            return Err(FioError::at_line(
                path,
                line_no,
                format!("option '{line}' outside of a [section]"),
            ));
        };
        // fio treats any option line starting with "include" as a directive.
        if line.starts_with("include") {
            return Err(FioError::at_line(
                path,
                line_no,
                "include directives are not supported",
            ));
        }
        s.opts.push((line_no, line.to_string()));
    }
    if let Some(s) = section.take() {
        finish_section(&mut b, path, s, &env)?;
    }
    if b.jobs.is_empty() {
        return Err(FioError::in_file(path, "no jobs defined"));
    }
    Ok(b.finish(OutputOptions::default()))
}

struct Section {
    name: String,
    line: usize,
    opts: Vec<(usize, String)>,
}

/// Strips blanks and comments like fio's `strip_blank_front` /
/// `strip_blank_end`: the first `;` or `#` anywhere ends the line.
fn strip_line(raw: &str) -> &str {
    let cut = raw.find([';', '#']).unwrap_or(raw.len());
    raw[..cut].trim_matches(|c: char| c.is_whitespace() || c.is_control())
}

/// Replaces `${VAR}` with the variable's value, like fio's
/// `fio_option_dup_subs`; a `${` without a closing `}` (or `${}`) is kept as
/// is. fio substitutes an empty string for an unset variable, which turns
/// `bs=${BS}` into a confusing "requires a value" and `size=${N}g` into a
/// different size; an unset variable is refused by name instead. fio's
/// host-dependent keywords are refused.
fn substitute(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find("${") {
        let after = &rest[pos + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let var = &after[..end];
        if var.is_empty() {
            out.push_str(&rest[..pos + 3]);
            rest = &after[end + 1..];
            continue;
        }
        out.push_str(&rest[..pos]);
        match env(var) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "environment variable '{var}' (used as ${{{var}}}) is not set; fio would \
                     substitute an empty string, iosched refuses to guess"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    for kw in ["$pagesize", "$mb_memory", "$ncpus"] {
        if out.contains(kw) {
            return Err(format!(
                "fio keyword '{kw}' is not supported (it depends on the host)"
            ));
        }
    }
    Ok(out)
}

fn finish_section(
    b: &mut Builder,
    path: &str,
    s: Section,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), FioError> {
    // Look every option up first, so unknown names are reported in file order.
    let mut parsed: Vec<(usize, &'static OptDef, Option<String>)> = Vec::new();
    for (line_no, text) in &s.opts {
        let text = substitute(text, env).map_err(|m| FioError::at_line(path, *line_no, m))?;
        let (key, value) = match text.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (text.trim(), None),
        };
        let def = find(key).ok_or_else(|| {
            FioError::at_line(path, *line_no, super::options::unknown_option(key))
        })?;
        parsed.push((*line_no, def, value));
    }
    // fio sorts a section's options by priority before applying them (so
    // kb_base applies before sizes and filename comes last); keep the
    // relative order of equal priorities, i.e. the last duplicate wins.
    parsed.sort_by_key(|(_, def, _)| std::cmp::Reverse(def.prio));

    // fio: a section whose name starts with "global" is a global section.
    if s.name.starts_with("global") {
        for (line_no, def, value) in &parsed {
            b.apply_global(def, value.as_deref())
                .map_err(|m| FioError::at_line(path, *line_no, name_option(def.name, m)))?;
        }
        return Ok(());
    }

    let mut state: JobState = b.global.clone();
    // The section name replaces any name= inherited from a global section.
    state.name = None;
    let mut opts = Vec::new();
    for (line_no, def, value) in &parsed {
        b.apply(&mut state, &mut opts, def, value.as_deref())
            .map_err(|m| FioError::at_line(path, *line_no, name_option(def.name, m)))?;
    }
    let source = SourceLocation::File {
        path: path.to_string(),
        line: s.line,
    };
    let job = state
        .finish(&s.name, source, opts, &mut b.warnings)
        .map_err(|m| FioError::at_line(path, s.line, m))?;
    b.jobs.push(job);
    Ok(())
}

/// Prefix a value error with the option it is about, unless it already names it.
fn name_option(name: &str, message: String) -> String {
    if message.contains(&format!("'{name}'")) {
        message
    } else {
        format!("option '{name}': {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip() {
        assert_eq!(strip_line("  bs=4k ; comment"), "bs=4k");
        assert_eq!(strip_line("# whole"), "");
        assert_eq!(strip_line("filename=/dev/a#1"), "filename=/dev/a");
        assert_eq!(strip_line("rw=read\r"), "rw=read");
    }

    #[test]
    fn subst() {
        let env = |k: &str| (k == "DEV").then(|| "/dev/sdb".to_string());
        assert_eq!(
            substitute("filename=${DEV}", &env).unwrap(),
            "filename=/dev/sdb"
        );
        let e = substitute("x=${NOPE}y", &env).unwrap_err();
        assert!(e.contains("'NOPE'") && e.contains("not set"), "{e}");
        assert_eq!(substitute("x=${}y", &env).unwrap(), "x=${}y");
        assert_eq!(substitute("x=${DEV", &env).unwrap(), "x=${DEV");
        assert_eq!(substitute("x=$DEV", &env).unwrap(), "x=$DEV");
        assert!(substitute("size=$mb_memory", &env).is_err());
    }
}
