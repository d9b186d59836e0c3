//! The error type of the fio input parser.

/// An error found while reading a fio job file or fio command line.
///
/// The rendered form (`Display`) names where the problem is, so a user can
/// jump straight to it:
///
/// * job files: `FILE:LINE: message` (or `FILE: message` when the problem
///   is not tied to one line, e.g. "no jobs defined");
/// * command line: `command line: option '-x': message` (or
///   `command line: message`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rendered}")]
pub struct FioError {
    file: Option<String>,
    line: Option<usize>,
    option: Option<String>,
    message: String,
    rendered: String,
}

impl FioError {
    /// An error on a given line of a job file.
    pub(crate) fn at_line(path: &str, line: usize, message: impl Into<String>) -> Self {
        let message = message.into();
        FioError {
            rendered: format!("{path}:{line}: {message}"),
            file: Some(path.to_string()),
            line: Some(line),
            option: None,
            message,
        }
    }

    /// An error about a job file as a whole.
    pub(crate) fn in_file(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        FioError {
            rendered: format!("{path}: {message}"),
            file: Some(path.to_string()),
            line: None,
            option: None,
            message,
        }
    }

    /// An error on the command line, optionally about one option (as the
    /// user wrote it, dashes included).
    pub(crate) fn cli(option: Option<&str>, message: impl Into<String>) -> Self {
        let message = message.into();
        let rendered = match option {
            Some(o) => format!("command line: option '{o}': {message}"),
            None => format!("command line: {message}"),
        };
        FioError {
            rendered,
            file: None,
            line: None,
            option: option.map(str::to_string),
            message,
        }
    }

    /// The job file the error is in (`None` for command-line errors).
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The 1-based line of the job file, when the error is tied to a line.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The command-line option the error is about, as written.
    pub fn option(&self) -> Option<&str> {
        self.option.as_deref()
    }

    /// The bare message, without the location prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the error comes from the command line rather than a file.
    pub fn is_command_line(&self) -> bool {
        self.file.is_none()
    }
}
