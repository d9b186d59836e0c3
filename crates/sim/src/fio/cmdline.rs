//! The command-line front end, following fio's `parse_cmd_line`.

use super::builder::Builder;
use super::options::{find, Arg, JobState};
use super::{FioError, FioInput, OutputFormat, OutputOptions, SourceLocation};

/// How a fio program option (not a job option) is handled.
enum Prog {
    Output,
    OutputFormat,
    ReadOnly,
    WarningsFatal,
    /// `--minimal`: terse output.
    Minimal,
    TerseVersion,
    /// Accepted and ignored.
    Ignored,
    /// Rejected with the given reason.
    Unsupported(&'static str),
}

/// Whether a program option takes a value (getopt's `has_arg` in fio's
/// init.c `l_opts`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum HasArg {
    No,
    Required,
    /// The value may only be attached with `=` (getopt's optional_argument).
    Optional,
}

/// fio's program options (init.c `l_opts`, with their `has_arg`); they are
/// matched before job options, as in fio's getopt table. A refused option
/// that takes a value has the value consumed first, so the message gives the
/// real reason rather than a complaint about the value.
fn program_option(name: &str) -> Option<(Prog, HasArg)> {
    use HasArg::{No, Optional as Opt, Required as Req};
    use Prog::*;
    const NOT_SIM: &str = "this fio program option is not supported by the simulator";
    Some(match name {
        "output" => (Output, Req),
        "output-format" => (OutputFormat, Req),
        "readonly" => (ReadOnly, No),
        "warnings-fatal" => (WarningsFatal, No),
        "eta" | "eta-newline" | "eta-interval" | "max-jobs" | "alloc-size" => (Ignored, Req),
        "bandwidth-log" => (Ignored, Opt),
        "minimal" => (Minimal, No),
        "append-terse" => (
            Unsupported("--append-terse is deprecated in fio; use --output-format=normal,terse"),
            Opt,
        ),
        "terse-version" => (TerseVersion, Req),
        "latency-log" => (Unsupported("--latency-log is deprecated in fio too"), Req),
        "status-interval" => (
            Unsupported("periodic status output is not modeled yet (the report is printed once, at the end)"),
            Req,
        ),
        "section" => (
            Unsupported("--section selects sections of a job file: use `iosched run FILE` (sections are not selectable yet)"),
            Req,
        ),
        "debug" => (
            Unsupported("fio's debug logging traces fio's own code, which the simulator does not run"),
            Req,
        ),
        "profile" => (
            Unsupported("fio's built-in job profiles (tiobench, act) are not modeled"),
            Req,
        ),
        "trigger-file" | "trigger-timeout" | "trigger" | "trigger-remote" => (
            Unsupported("triggers run commands on the host during a real run; the simulator has none"),
            Req,
        ),
        "aux-path" => (
            Unsupported("--aux-path places fio's state files; the simulator writes none"),
            Req,
        ),
        "inflate-log" => (Unsupported("--inflate-log is a log utility, not a run"), Req),
        "server" | "daemonize" | "client" | "remote-config" | "server-internal" => (
            Unsupported("client/server mode is not supported by the simulator"),
            if name == "server" { Opt } else { Req },
        ),
        "idle-prof" => (Unsupported("idle profiling measures the host's CPUs, which are simulated"), Req),
        "cmdhelp" | "enghelp" | "crctest" | "memcpytest" => (Unsupported(NOT_SIM), Opt),
        "version" | "help" | "showcmd" | "parse-only" | "cpuclock-test"
        | "merge-blktrace-only" => (Unsupported(NOT_SIM), No),
        _ => return None,
    })
}

/// fio's `--terse-version`: 3, 4 or 5 are written; fio's 2 (an older layout)
/// is not.
pub fn parse_terse_version(v: &str) -> Result<u32, String> {
    match v.trim().parse::<u32>() {
        Ok(n) if crate::report::terse::VERSIONS.contains(&n) => Ok(n),
        Ok(2) => Err("terse version 2 (fio's older layout) is not written; use 3, 4 or 5".into()),
        _ => Err(format!("invalid terse version '{v}' (valid: 3, 4, 5)")),
    }
}

/// fio's `--output-format`: a comma-separated list; each report is printed
/// once, in fio's order (see [`OutputFormat`]).
pub fn parse_output_format(v: &str) -> Result<Vec<OutputFormat>, String> {
    let mut formats = Vec::new();
    for f in v.split(',') {
        let f = match f {
            "normal" => OutputFormat::Normal,
            "json" => OutputFormat::Json,
            "json+" => OutputFormat::JsonPlus,
            "terse" | "minimal" | "csv" => OutputFormat::Terse,
            _ => {
                return Err(format!(
                    "invalid output format '{f}' (valid: normal, json, json+, terse)"
                ))
            }
        };
        if !formats.contains(&f) {
            formats.push(f);
        }
    }
    // json+ is json with the histograms: fio prints one JSON report.
    if formats.contains(&OutputFormat::JsonPlus) {
        formats.retain(|f| *f != OutputFormat::Json);
    }
    formats.sort();
    Ok(formats)
}

/// Where options currently go: the global section or the job being built.
enum Target {
    Global,
    Job {
        arg: String,
        state: Box<JobState>,
        opts: Vec<(String, String)>,
    },
}

/// Parses fio's command-line syntax (the arguments after `iosched fio`).
///
/// Options before the first `--name` are global; `--name=x` starts job `x`.
/// Both `-opt=val` and `--opt=val` work; options that take a value also
/// accept it as the next argument (`--bs 4k`). Job-file arguments are
/// rejected: use `iosched run FILE` for job files.
pub fn parse_command_line(args: &[String]) -> Result<FioInput, FioError> {
    let mut b = Builder::default();
    let mut output = OutputOptions::default();
    let mut target = Target::Global;
    let mut readonly = false;
    let mut warnings_fatal = false;
    let mut i = 0;

    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        if arg == "--" {
            if i < args.len() {
                return Err(job_file_error(&args[i]));
            }
            break;
        }
        let body = match arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
            Some(body) if !body.is_empty() => body,
            _ => return Err(job_file_error(arg)),
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let shown = &arg[..arg.len() - body.len() + name.len()];
        let err = |m: String| FioError::cli(Some(shown), m);

        if let Some((p, has_arg)) = program_option(name) {
            let value = match has_arg {
                HasArg::Required => Some(
                    take_value(inline, args, &mut i)
                        .ok_or_else(|| err("requires an argument".to_string()))?,
                ),
                HasArg::Optional => inline,
                HasArg::No => {
                    if inline.is_some() && !matches!(p, Prog::Unsupported(_)) {
                        return Err(err("does not take a value".to_string()));
                    }
                    None
                }
            };
            match p {
                Prog::Output => output.output_file = value.map(str::to_string),
                Prog::OutputFormat => {
                    output.formats = parse_output_format(value.unwrap_or("")).map_err(err)?
                }
                Prog::ReadOnly => readonly = true,
                Prog::Minimal => output.formats = vec![OutputFormat::Terse],
                Prog::TerseVersion => {
                    output.terse_version = parse_terse_version(value.unwrap_or("")).map_err(err)?
                }
                Prog::WarningsFatal => warnings_fatal = true,
                Prog::Ignored => b.note_ignored(name),
                Prog::Unsupported(why) => return Err(err(why.to_string())),
            }
            continue;
        }

        let def = find(name).ok_or_else(|| err(super::options::unknown_option(name)))?;
        let value = match def.arg {
            // getopt's optional_argument: only "--opt=val" carries a value.
            Arg::Flag => inline,
            Arg::Required | Arg::Optional => Some(
                take_value(inline, args, &mut i)
                    .ok_or_else(|| err("requires an argument".to_string()))?,
            ),
        };

        if def.name == "name" {
            let job_name = value.unwrap_or("");
            finish_target(&mut b, std::mem::replace(&mut target, Target::Global))?;
            // fio: "--name=global..." selects the global section again.
            if !job_name.starts_with("global") {
                target = Target::Job {
                    arg: arg.to_string(),
                    state: Box::new(b.global.clone()),
                    opts: Vec::new(),
                };
            }
        }
        match &mut target {
            Target::Global => b.apply_global(def, value).map_err(err)?,
            Target::Job { state, opts, .. } => b.apply(state, opts, def, value).map_err(err)?,
        }
    }
    finish_target(&mut b, target)?;

    if b.jobs.is_empty() {
        return Err(FioError::cli(
            None,
            "no jobs defined (start a job with --name=NAME)",
        ));
    }
    if readonly {
        if let Some(j) = b.jobs.iter().find(|j| j.rw.writes()) {
            return Err(FioError::cli(
                None,
                format!(
                    "job '{}' has write bit set, but fio is in read-only mode",
                    j.name
                ),
            ));
        }
    }
    if warnings_fatal {
        if let Some(w) = b.warnings.first() {
            return Err(FioError::cli(None, format!("{w} (--warnings-fatal)")));
        }
    }
    Ok(b.finish(output))
}

/// The value of an option: attached with '=' or, like getopt's
/// required_argument, the next argument. Empty values count as missing.
fn take_value<'a>(inline: Option<&'a str>, args: &'a [String], i: &mut usize) -> Option<&'a str> {
    let v = match inline {
        Some(v) => v,
        None => {
            let v = args.get(*i)?;
            *i += 1;
            v.as_str()
        }
    };
    (!v.is_empty()).then_some(v)
}

fn finish_target(b: &mut Builder, target: Target) -> Result<(), FioError> {
    if let Target::Job { arg, state, opts } = target {
        let job = state
            .finish("fio", SourceLocation::CommandLine, opts, &mut b.warnings)
            .map_err(|m| FioError::cli(Some(&arg), m))?;
        b.jobs.push(job);
    }
    Ok(())
}

fn job_file_error(arg: &str) -> FioError {
    FioError::cli(
        None,
        format!("job file arguments ('{arg}') are not accepted here; use `iosched run {arg}`"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_formats() {
        use OutputFormat::*;
        let f = |v| parse_output_format(v).unwrap();
        assert_eq!(f("normal"), vec![Normal]);
        assert_eq!(f("json"), vec![Json]);
        assert_eq!(f("json,json"), vec![Json]);
        assert_eq!(f("json+"), vec![JsonPlus]);
        // fio prints the JSON first whatever the order given.
        assert_eq!(f("normal,json"), vec![Json, Normal]);
        assert_eq!(f("json,normal,json+"), vec![JsonPlus, Normal]);
        assert_eq!(f("terse"), vec![Terse]);
        assert_eq!(f("normal,terse,json"), vec![Terse, Json, Normal]);
        assert_eq!(parse_terse_version("4"), Ok(4));
        assert!(parse_terse_version("2")
            .unwrap_err()
            .contains("not written"));
        assert!(parse_terse_version("x")
            .unwrap_err()
            .contains("invalid terse version"));
        assert!(parse_output_format("normal,").is_err());
        assert!(parse_output_format("xml")
            .unwrap_err()
            .contains("invalid output format 'xml'"));
    }
}
