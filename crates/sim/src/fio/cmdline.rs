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
    /// Accepted and ignored; `true` when it takes a value.
    Ignored(bool),
    /// Rejected with the given reason.
    Unsupported(&'static str),
}

/// fio's program options (init.c `l_opts`); they are matched before job
/// options, as in fio's getopt table.
fn program_option(name: &str) -> Option<Prog> {
    use Prog::*;
    Some(match name {
        "output" => Output,
        "output-format" => OutputFormat,
        "readonly" => ReadOnly,
        "warnings-fatal" => WarningsFatal,
        "eta" | "eta-newline" | "eta-interval" | "max-jobs" | "alloc-size" => Ignored(true),
        "bandwidth-log" => Ignored(false),
        "minimal" | "append-terse" | "terse-version" => {
            Unsupported("terse output is not supported (use --output-format=normal or json)")
        }
        "latency-log" => Unsupported("--latency-log is deprecated in fio too"),
        "status-interval" => Unsupported("periodic status output is not modeled yet"),
        "section" => Unsupported("--section only applies to job files"),
        "version"
        | "help"
        | "cmdhelp"
        | "enghelp"
        | "showcmd"
        | "debug"
        | "parse-only"
        | "inflate-log"
        | "profile"
        | "server"
        | "daemonize"
        | "client"
        | "remote-config"
        | "cpuclock-test"
        | "crctest"
        | "memcpytest"
        | "idle-prof"
        | "trigger-file"
        | "trigger-timeout"
        | "trigger"
        | "trigger-remote"
        | "aux-path"
        | "merge-blktrace-only" => {
            Unsupported("this fio program option is not supported by the simulator")
        }
        _ => return None,
    })
}

fn parse_output_format(v: &str) -> Result<OutputFormat, String> {
    let mut formats = Vec::new();
    for f in v.split(',') {
        let f = match f {
            "normal" => OutputFormat::Normal,
            "json" => OutputFormat::Json,
            "json+" => return Err("output format 'json+' is not supported".to_string()),
            "terse" | "minimal" | "csv" => {
                return Err(format!("output format '{f}' is not supported"))
            }
            _ => return Err(format!("invalid output format '{f}'")),
        };
        if !formats.contains(&f) {
            formats.push(f);
        }
    }
    match formats.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!("combined output formats ('{v}') are not supported")),
    }
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

        if let Some(p) = program_option(name) {
            let takes_value = matches!(p, Prog::Output | Prog::OutputFormat | Prog::Ignored(true));
            let value = if takes_value {
                Some(
                    take_value(inline, args, &mut i)
                        .ok_or_else(|| err("requires an argument".to_string()))?,
                )
            } else {
                if inline.is_some() {
                    return Err(err("does not take a value".to_string()));
                }
                None
            };
            match p {
                Prog::Output => output.output_file = value.map(str::to_string),
                Prog::OutputFormat => {
                    output.format = parse_output_format(value.unwrap_or("")).map_err(err)?
                }
                Prog::ReadOnly => readonly = true,
                Prog::WarningsFatal => warnings_fatal = true,
                Prog::Ignored(_) => b.note_ignored(name),
                Prog::Unsupported(why) => return Err(err(why.to_string())),
            }
            continue;
        }

        let def = find(name).ok_or_else(|| err(format!("unknown option '{name}'")))?;
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
        assert_eq!(parse_output_format("normal").unwrap(), OutputFormat::Normal);
        assert_eq!(parse_output_format("json").unwrap(), OutputFormat::Json);
        assert_eq!(
            parse_output_format("json,json").unwrap(),
            OutputFormat::Json
        );
        assert!(parse_output_format("json+").is_err());
        assert!(parse_output_format("json,normal").is_err());
        assert!(parse_output_format("terse").is_err());
        assert!(parse_output_format("xml").is_err());
    }
}
