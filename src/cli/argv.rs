//! Hides a `--url` password from the process's command line (`/proc/PID/cmdline`, `ps`) once
//! the arguments are parsed, as the mysql client does for `-p`: anyone on the host may read
//! another process's command line for as long as it runs.
//!
//! Which bytes to hide is pure ([`secret_spans`]); overwriting them needs the original argv
//! memory, which Rust's std does not hand out, so on Linux with glibc a function in
//! `.init_array` records the pointers glibc passes to initialisers (argc, argv, envp). Elsewhere
//! hiding is a no-op.

use std::ops::Range;

/// Bytes to hide: the index of an argument and a byte range within it.
pub type Span = (usize, Range<usize>);

/// The byte ranges to hide, as (argument index, range): the password of each `--url` value
/// (`--url URL` or `--url=URL`). Pure.
pub fn secret_spans(args: &[&[u8]]) -> Vec<Span> {
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let (offset, url) = if let Some(v) = arg.strip_prefix(b"--url=") {
            (6, v)
        } else if i > 0 && args[i - 1] == b"--url" {
            (0, *arg)
        } else {
            continue;
        };
        if let Some(r) = password_span(url) {
            out.push((i, r.start + offset..r.end + offset));
        }
    }
    out
}

/// The bytes of the password in `scheme://user:password@host...`: from the first ':' after
/// the user to the last '@' before any '?'. Generous on purpose: a password with a '/' or an
/// '@' in it is still hidden, and hiding a byte too many only shortens what `ps` shows.
fn password_span(url: &[u8]) -> Option<Range<usize>> {
    let start = url.windows(3).position(|w| w == b"://")? + 3;
    let rest = &url[start..];
    let rest = &rest[..rest.iter().position(|b| *b == b'?').unwrap_or(rest.len())];
    let at = rest.iter().rposition(|b| *b == b'@')?;
    let colon = rest[..at].iter().position(|b| *b == b':')?;
    (colon + 1 < at).then(|| start + colon + 1..start + at)
}

/// Overwrites each `--url` password in the process's argv memory with `x`, so the command
/// line no longer shows it. Call after the arguments are parsed (std's `env::args` reads the
/// same memory and sees the `x`s from then on) and before other threads start.
pub fn hide_url_passwords() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    linux::hide(secret_spans);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod linux {
    use super::Span;
    use std::ffi::{c_char, c_int, CStr};
    use std::sync::atomic::{AtomicIsize, AtomicPtr, Ordering};

    static ARGC: AtomicIsize = AtomicIsize::new(0);
    static ARGV: AtomicPtr<*mut c_char> = AtomicPtr::new(std::ptr::null_mut());

    /// glibc calls each function in `.init_array` with (argc, argv, envp) before `main`; this
    /// is how std itself finds the arguments on Linux.
    #[used]
    #[link_section = ".init_array"]
    static RECORD_ARGV: extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) = record;

    extern "C" fn record(argc: c_int, argv: *mut *mut c_char, _envp: *mut *mut c_char) {
        ARGC.store(argc as isize, Ordering::Relaxed);
        ARGV.store(argv, Ordering::Relaxed);
    }

    pub(super) fn hide(spans: fn(&[&[u8]]) -> Vec<Span>) {
        let argc = ARGC.load(Ordering::Relaxed);
        let argv = ARGV.load(Ordering::Relaxed);
        if argv.is_null() || argc <= 0 {
            return;
        }
        // Safety: glibc passed `argv` with `argc` entries, each null or a NUL-terminated string
        // that lives, unfreed, for the whole process (the kernel's argument area); we read each
        // up to its NUL only.
        let args: Vec<(*mut u8, usize)> = (0..argc)
            .map(|i| unsafe {
                let p = *argv.offset(i);
                if p.is_null() {
                    (std::ptr::null_mut(), 0)
                } else {
                    (p.cast::<u8>(), CStr::from_ptr(p).to_bytes().len())
                }
            })
            .collect();
        let found = {
            // Safety: as above, each (pointer, length) is the readable string before its NUL.
            let views: Vec<&[u8]> = args
                .iter()
                .map(|&(p, len)| {
                    if p.is_null() {
                        &[][..]
                    } else {
                        unsafe { std::slice::from_raw_parts(p, len) }
                    }
                })
                .collect();
            spans(&views)
        };
        for (i, range) in found {
            let (p, len) = args[i];
            debug_assert!(range.end <= len);
            // Safety: the range lies within argument `i` (before its NUL), the memory is the
            // process's own writable argument area, the shared views above are gone, and no
            // other thread reads the arguments while the CLI is still parsing its own.
            unsafe { std::ptr::write_bytes(p.add(range.start), b'x', range.len()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(args: &[&str]) -> Vec<(usize, String)> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        secret_spans(&bytes)
            .into_iter()
            .map(|(i, r)| (i, args[i][r].to_string()))
            .collect()
    }

    #[test]
    fn finds_the_password_of_each_url_argument_only() {
        assert_eq!(
            spans(&["myrecode", "scan", "--url", "mysql://u:s3cret@h:3306/db"]),
            vec![(3, "s3cret".to_string())]
        );
        assert_eq!(
            spans(&[
                "myrecode",
                "scan",
                "--url=mysql://u:p%40ss@h/db?ssl-ca=/a@b.pem"
            ]),
            vec![(2, "p%40ss".to_string())]
        );
        // An unencoded '@' or '/' in the password is hidden whole, though the URL is refused.
        assert_eq!(
            spans(&["x", "--url", "mysql://u:p@s/s@h/db"]),
            vec![(2, "p@s/s".to_string())]
        );
    }

    #[test]
    fn leaves_urls_without_a_password_and_other_arguments_alone() {
        assert!(spans(&["x", "--url", "mysql://u@h:3306/db"]).is_empty());
        assert!(spans(&["x", "--url", "mysql://h:3306/db"]).is_empty());
        assert!(spans(&["x", "--url", "mysql://u:@h/db"]).is_empty());
        assert!(spans(&["x", "job.yaml", "mysql://u:pw@h/db"]).is_empty());
        assert!(spans(&["--url"]).is_empty());
    }
}
