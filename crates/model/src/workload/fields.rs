//! Reading typed fields out of a spanned TOML table, with errors that say where.
//!
//! The workload is read from toml's spanned document tree (`DeTable`) by hand
//! rather than through `#[derive(Deserialize)]`: serde's messages ("invalid value:
//! integer `-2`, expected u32") name neither the field nor the app, and stop at
//! the first unknown key without saying which keys exist. Walking the tree, every
//! value keeps its span, so each check can point at the exact value it refuses.

use std::ops::{Range, RangeInclusive};
use std::time::Duration;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::error::{Source, WorkloadError};

/// Largest duration accepted anywhere in a workload file. Nobody co-locates apps
/// for a month in one run, and the cap keeps the manager's time arithmetic (arrival
/// + repetitions + epochs) far from overflow.
pub(super) const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

pub(super) type Value<'a, 'i> = &'a Spanned<DeValue<'i>>;

/// One TOML table being read: knows which app and which key prefix its errors
/// belong to.
#[derive(Debug)]
pub(super) struct Fields<'a, 'i> {
    pub src: Source<'a>,
    /// `app "NAME"` or `app[INDEX]`; None at the top level.
    pub app: Option<&'a str>,
    /// Key path of this table inside the app, with a trailing dot (`metric.`).
    prefix: String,
    table: &'a DeTable<'i>,
    /// The table's own span (its `[header]`, or the inline `{...}`), where errors
    /// about missing keys point.
    pub span: Range<usize>,
}

impl<'a, 'i> Fields<'a, 'i> {
    /// Wraps `table` and refuses keys not in `allowed`, the first one in file order,
    /// naming the closest valid key and listing them all; `what` names the table in
    /// that message (`[[app]]`, `[app.metric]`).
    pub fn new(
        src: Source<'a>,
        app: Option<&'a str>,
        prefix: String,
        table: &'a DeTable<'i>,
        span: Range<usize>,
        allowed: &[&str],
        what: &str,
    ) -> Result<Self, WorkloadError> {
        let fields = Self {
            src,
            app,
            prefix,
            table,
            span,
        };
        let unknown = table
            .keys()
            .filter(|k| !allowed.contains(&k.get_ref().as_ref()))
            .min_by_key(|k| k.span().start);
        if let Some(key) = unknown {
            let name = key.get_ref().as_ref();
            let hint = closest(name, allowed)
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            return Err(fields.error(
                &key.span(),
                name,
                format!(
                    "unknown key `{name}` in {what}; {hint}the valid keys are: {}",
                    allowed.join(", ")
                ),
            ));
        }
        Ok(fields)
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<Value<'a, 'i>> {
        self.table.get(key)
    }

    /// The key path of `key` for errors: `metric.regex`.
    pub fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// An error about `key` (or `key[3]`, `key.SUB`) at `span`.
    pub fn error(&self, span: &Range<usize>, key: &str, message: String) -> WorkloadError {
        self.src
            .error(span, self.app, Some(self.path(key)), message)
    }

    /// An error about the value of `key`: "expected EXPECTED, found VALUE".
    pub fn expected(&self, key: &str, v: Value<'_, '_>, expected: &str) -> WorkloadError {
        self.error(
            &v.span(),
            key,
            format!("expected {expected}, found {}", describe(v.get_ref())),
        )
    }

    /// A required key is absent; the error points at the table.
    pub fn missing(&self, key: &str, message: &str) -> WorkloadError {
        self.error(&self.span, key, format!("missing: {message}"))
    }

    /// An optional string.
    pub fn str(&self, key: &str) -> Result<Option<(&'a str, Range<usize>)>, WorkloadError> {
        self.get(key)
            .map(|v| match v.get_ref() {
                DeValue::String(s) => Ok((s.as_ref(), v.span())),
                _ => Err(self.expected(key, v, "a string")),
            })
            .transpose()
    }

    /// An optional string that must not be empty (or only white space).
    pub fn non_empty_str(
        &self,
        key: &str,
        what: &str,
    ) -> Result<Option<(&'a str, Range<usize>)>, WorkloadError> {
        match self.str(key)? {
            Some((s, span)) if s.trim().is_empty() => Err(self.error(
                &span,
                key,
                format!("expected {what}, found an empty string"),
            )),
            other => Ok(other),
        }
    }

    /// An optional boolean.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, WorkloadError> {
        self.get(key)
            .map(|v| match v.get_ref() {
                DeValue::Boolean(b) => Ok(*b),
                _ => Err(self.expected(key, v, "true or false")),
            })
            .transpose()
    }

    /// An optional whole number in `range`; `expected` describes the range for the
    /// message ("a whole number from 1 to 4096").
    pub fn int(
        &self,
        key: &str,
        range: RangeInclusive<i64>,
        expected: &str,
    ) -> Result<Option<i64>, WorkloadError> {
        self.get(key)
            .map(|v| match v.get_ref() {
                DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                    .ok()
                    .filter(|n| range.contains(n))
                    .ok_or_else(|| self.expected(key, v, expected)),
                _ => Err(self.expected(key, v, expected)),
            })
            .transpose()
    }

    /// An optional string that must be one of `choices`.
    pub fn choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
    ) -> Result<Option<T>, WorkloadError> {
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let expected = format!("one of {}", names.join(", "));
        self.get(key)
            .map(|v| {
                let found = match v.get_ref() {
                    DeValue::String(s) => choices.iter().find(|(n, _)| *n == s.as_ref()),
                    _ => None,
                };
                found
                    .map(|(_, t)| *t)
                    .ok_or_else(|| self.expected(key, v, &expected))
            })
            .transpose()
    }

    /// An optional duration: a string with units, as `humantime` reads them
    /// (`"1.5s"`, `"200ms"`, `"1m 30s"`), or a plain number of seconds (`2`, `0.25`).
    pub fn duration(&self, key: &str) -> Result<Option<Duration>, WorkloadError> {
        const EXPECTED: &str =
            "a duration such as \"1.5s\", \"200ms\" or \"2m\", or a number of seconds";
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let d = match v.get_ref() {
            DeValue::String(s) => humantime::parse_duration(s.trim()).map_err(|e| {
                self.error(
                    &v.span(),
                    key,
                    format!("expected {EXPECTED}, found {:?} ({e})", s.as_ref()),
                )
            })?,
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(Duration::from_secs)
                .ok_or_else(|| self.expected(key, v, &format!("{EXPECTED} >= 0")))?,
            DeValue::Float(f) => f
                .as_str()
                .parse::<f64>()
                .ok()
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                .ok_or_else(|| self.expected(key, v, &format!("{EXPECTED} >= 0")))?,
            _ => return Err(self.expected(key, v, EXPECTED)),
        };
        if d > MAX_DURATION {
            return Err(self.error(
                &v.span(),
                key,
                format!(
                    "expected a duration of at most 30 days, found {}",
                    humantime::format_duration(d)
                ),
            ));
        }
        Ok(Some(d))
    }

    /// An optional array of non-empty strings; `what` describes one element
    /// for messages ("a Debian package name").
    pub fn strings(&self, key: &str, what: &str) -> Result<Option<Vec<String>>, WorkloadError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.expected(key, v, &format!("an array of strings, each {what}")));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item.get_ref() {
                DeValue::String(s) if !s.trim().is_empty() => Ok(s.to_string()),
                _ => Err(self.expected(&format!("{key}[{i}]"), item, what)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional sub-table (`[app.metric]` or an inline `{ ... }`), checked
    /// against its own key list.
    pub fn table(
        &self,
        key: &str,
        allowed: &[&str],
        what: &str,
    ) -> Result<Option<Fields<'a, 'i>>, WorkloadError> {
        self.get(key)
            .map(|v| match v.get_ref() {
                DeValue::Table(t) => Fields::new(
                    self.src,
                    self.app,
                    format!("{}.", self.path(key)),
                    t,
                    v.span(),
                    allowed,
                    what,
                ),
                _ => Err(self.expected(key, v, &format!("a table ({what})"))),
            })
            .transpose()
    }
}

/// A short description of a value for "found ..." in messages: the value itself
/// for scalars (strings quoted and cut to 40 characters), the kind for containers.
pub(super) fn describe(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) if s.chars().count() > 40 => {
            let cut: String = s.chars().take(40).collect();
            format!("{cut:?}…")
        }
        DeValue::String(s) => format!("{:?}", s.as_ref()),
        DeValue::Integer(i) => i.to_string(),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => format!("the date-time {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

/// The valid key closest to a misspelt one, if it is close enough to be a typo
/// (edit distance at most 2, or 1 for short keys), like cargo's suggestions.
fn closest<'k>(key: &str, valid: &[&'k str]) -> Option<&'k str> {
    let limit = if key.chars().count() <= 4 { 1 } else { 2 };
    valid
        .iter()
        .map(|v| (edit_distance(key, v), *v))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (up + 1).min(row[j] + 1).min(diag + usize::from(ca != *cb));
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        let cases = [
            ("threads", "threads", 0),
            ("thread", "threads", 1),
            ("treads", "threads", 1),
            ("arrival", "arrive_at", 3), // arriv+"e_"+a, l->t
            ("", "abc", 3),
            ("kitten", "sitting", 3),
        ];
        for (a, b, d) in cases {
            assert_eq!(edit_distance(a, b), d, "{a} / {b}");
            assert_eq!(edit_distance(b, a), d, "{b} / {a}");
        }
    }

    #[test]
    fn suggestions_only_for_likely_typos() {
        let valid = ["name", "threads", "repeat", "arrive_at", "env"];
        let cases = [
            ("thread", Some("threads")),
            ("repaet", Some("repeat")),
            ("arrive_At", Some("arrive_at")),
            ("nam", Some("name")),
            ("ENV", None),
            ("cores", None),
            ("x", None),
        ];
        for (key, want) in cases {
            assert_eq!(closest(key, &valid), want, "{key}");
        }
    }
}
