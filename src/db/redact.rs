//! Keeps passwords out of every line we print: errors, logs and reports.

/// Renders an error chain as one line with any URL password masked.
pub fn redact_error(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for (i, cause) in err.chain().enumerate() {
        let part = cause.to_string();
        if i > 0 {
            if text.contains(&part) {
                continue;
            }
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    redact_urls(&text)
}

/// Masks the password of every `scheme://user:password@` found in `text`.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        // The authority ends at the first '/', whitespace or quote; a password may contain '@'.
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..colon]);
                out.push_str(":***");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_password_in_url() {
        let s = redact_urls("cannot connect to mysql://root:s3cr@t@127.0.0.1:3306/db now");
        assert_eq!(
            s,
            "cannot connect to mysql://root:***@127.0.0.1:3306/db now"
        );
    }

    #[test]
    fn leaves_url_without_password() {
        let s = redact_urls("mysql://root@host/db");
        assert_eq!(s, "mysql://root@host/db");
    }
}
