//! Why a workload file was refused, and where.
//!
//! Every message points at a place an editor can jump to (`file:line:column`, the
//! format compilers use, so terminals and IDEs make it clickable), names the field,
//! and says what was expected and what was found: the user fixes the file from the
//! message alone, without reading coloc's source.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::Path;

/// A place in a file: 1-based line, and 1-based column counted in characters (not
/// bytes), as rustc and most editors count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text`. Offsets past the end, or inside a
    /// multi-byte character, are moved back to the nearest character start so a
    /// slightly-off span from the TOML parser still yields a valid place.
    pub fn of_offset(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Self {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a workload file was refused.
///
/// Displayed as `file:line:column: app "NAME": field `KEY`: MESSAGE`, leaving out
/// the parts that do not apply (an unreadable file has no line; a TOML syntax
/// error has no field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError {
    /// The file as the caller named it (a path, or e.g. `<built-in demo>`).
    pub file: String,
    /// Where in the file, when the problem has a place.
    pub position: Option<Position>,
    /// The app the problem is in: `app "NAME"` once its name is known, else
    /// `app[INDEX]` counting `[[app]]` tables from 0.
    pub app: Option<String>,
    /// The field's key path inside the app (or at the top level): `threads`,
    /// `metric.regex`, `env.OMP_PROC_BIND`, `cpus[1]`.
    pub field: Option<String>,
    /// What was expected and what was found.
    pub message: String,
}

impl WorkloadError {
    /// The workload file could not be read. The model does no I/O, so the caller
    /// reads the file and hands the `io::Error` here; the message keeps the OS
    /// reason ("No such file or directory", "Permission denied").
    pub fn unreadable(path: impl AsRef<Path>, err: &io::Error) -> Self {
        Self {
            file: path.as_ref().display().to_string(),
            position: None,
            app: None,
            field: None,
            message: format!("cannot read the workload file: {err}"),
        }
    }

    /// The full field path, `app "bar-a".threads` or `epoch`, if the error has one.
    pub fn path(&self) -> Option<String> {
        match (&self.app, &self.field) {
            (Some(app), Some(field)) => Some(format!("{app}.{field}")),
            (Some(app), None) => Some(app.clone()),
            (None, Some(field)) => Some(field.clone()),
            (None, None) => None,
        }
    }

    /// The 1-based line, if the error has a place.
    pub fn line(&self) -> Option<usize> {
        self.position.map(|p| p.line)
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(p) = self.position {
            write!(f, ":{p}")?;
        }
        if let Some(app) = &self.app {
            write!(f, ": {app}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for WorkloadError {}

/// The text being parsed and its name: everything needed to turn a byte span into
/// an error with a place.
#[derive(Debug, Clone, Copy)]
pub(super) struct Source<'s> {
    pub file: &'s str,
    pub text: &'s str,
}

impl Source<'_> {
    /// An error at the start of `span`.
    pub fn error(
        &self,
        span: &Range<usize>,
        app: Option<&str>,
        field: Option<String>,
        message: String,
    ) -> WorkloadError {
        WorkloadError {
            file: self.file.to_string(),
            position: Some(Position::of_offset(self.text, span.start)),
            app: app.map(str::to_string),
            field,
            message,
        }
    }

    /// The TOML parser refused the text. Its message is short ("duplicate key"), so
    /// the offending text is quoted when it fits on a line.
    pub fn syntax(&self, err: &toml::de::Error) -> WorkloadError {
        let span = err.span().unwrap_or(0..0);
        let mut message = format!("invalid TOML: {}", err.message().trim_end());
        let snippet = self.text.get(span.clone()).unwrap_or("").trim();
        if !snippet.is_empty() && snippet.len() <= 40 && !snippet.contains('\n') {
            message.push_str(&format!(" (at `{snippet}`)"));
        }
        // The one duplicate-key error the format invites: a `[app]` or
        // `[app.metric]` header before the first `[[app]]` makes `app` a table.
        if err.message().starts_with("duplicate key") && snippet == "app" {
            message.push_str(
                "; `[[app]]` cannot follow an `[app]` or `[app.metric]` table: write `[[app]]` first and its sub-tables after it",
            );
        }
        self.error(&span, None, None, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_character_columns() {
        let text = "ab\nçd = 1\n\nx";
        let cases = [
            (0, 1, 1),
            (1, 1, 2),
            (2, 1, 3),  // the newline itself still belongs to line 1
            (3, 2, 1),  // `ç`, two bytes
            (5, 2, 2),  // `d`: column counts characters, not bytes
            (4, 2, 1),  // inside `ç`: moved back to its start
            (11, 3, 1), // the empty line
            (12, 4, 1),
            (99, 4, 2), // past the end: clamped to the end
        ];
        for (offset, line, column) in cases {
            assert_eq!(
                Position::of_offset(text, offset),
                Position { line, column },
                "offset {offset}"
            );
        }
    }

    #[test]
    fn display_leaves_out_missing_parts() {
        let full = WorkloadError {
            file: "examples/x.toml".into(),
            position: Some(Position {
                line: 7,
                column: 11,
            }),
            app: Some("app \"bar-a\"".into()),
            field: Some("threads".into()),
            message: "expected a whole number, found -2".into(),
        };
        assert_eq!(
            full.to_string(),
            "examples/x.toml:7:11: app \"bar-a\": field `threads`: expected a whole number, found -2"
        );
        assert_eq!(full.path().as_deref(), Some("app \"bar-a\".threads"));
        let top = WorkloadError {
            app: None,
            field: Some("epoch".into()),
            ..full.clone()
        };
        assert_eq!(
            top.to_string(),
            "examples/x.toml:7:11: field `epoch`: expected a whole number, found -2"
        );
        let io =
            WorkloadError::unreadable("w.toml", &io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(io.line(), None);
        assert_eq!(io.path(), None);
        assert!(
            io.to_string()
                .starts_with("w.toml: cannot read the workload file: "),
            "{io}"
        );
    }
}
