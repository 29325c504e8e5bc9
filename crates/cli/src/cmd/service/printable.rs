//! Text from the daemon made safe for a terminal, for every command that
//! prints what the daemon said.

/// `text` from the daemon, safe to print on a terminal: anything but
/// printable ASCII (escape sequences, newlines, other controls, Unicode
/// direction overrides) is shown escaped, and at most `max` characters are
/// kept. The daemon validates names, but notes and reasons quote what users
/// gave, and a daemon of another version may not validate at all.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (k, c) in text.chars().enumerate() {
        if k == max {
            out.push_str("...");
            break;
        }
        if c.is_ascii_graphic() || c == ' ' {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out
}

/// Longest note or reason shown.
pub const TEXT_WIDTH: usize = 240;
