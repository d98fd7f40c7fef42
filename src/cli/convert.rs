//! `myrecode convert`: streaming recode of stdin to stdout.
//!
//! Reads stdin in 64 KiB pieces through a streaming [`Decoder`] and
//! [`Encoder`], so input of any size runs in constant memory and a character
//! split across two reads converts exactly as if it were not.
//!
//! Exit codes:
//! * 0: everything converted exactly;
//! * 1: `--replace` was given and at least one byte or character had to be
//!   replaced (the output is complete but lossy; the count goes to stderr);
//! * 2: an error: without `--replace`, the first byte that does not decode or
//!   character that does not encode (the message gives its offset), or an
//!   I/O error. Output up to that point has already been written.

use crate::cli::{EXIT_ATTENTION, EXIT_OK};
use crate::codec::{Decoder, EncodeError, Encoder, Encoding, Tcvn3Convention};
use anyhow::Context;
use std::io::{ErrorKind, Read, Write};

/// Arguments of `convert`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    myrecode convert --from cp1251 < legacy.txt > utf8.txt\n  \
    myrecode convert --from utf-8 --to koi8-r < utf8.txt > koi8.txt\n  \
    myrecode convert --from tcvn3 --replace < vn.txt\n\n\
    Exit codes: 0 converted exactly; 1 --replace replaced something; 2 error (bad byte without --replace).")]
pub struct Args {
    /// Encoding of stdin: utf-8, cp1251, koi8-r, koi8-u, cp866, iso-8859-5, latin1, tcvn3
    /// (aliases and MySQL charset names such as koi8r or utf8mb4 work too).
    #[arg(long, value_name = "LABEL", value_parser = parse_encoding)]
    pub from: Encoding,

    /// Encoding of stdout (same labels as --from).
    #[arg(long, value_name = "LABEL", default_value = "utf-8", value_parser = parse_encoding)]
    pub to: Encoding,

    /// Replace undecodable bytes with U+FFFD (or '?' when the output is not UTF-8)
    /// and unencodable characters with '?', instead of stopping at the first one.
    #[arg(long)]
    pub replace: bool,

    /// TCVN3 convention to write with --to tcvn3: two-byte writes toned capitals as
    /// base capital + toned lower-case byte; single-byte refuses them.
    /// (Reading accepts both.)
    #[arg(long, value_name = "CONVENTION", default_value = "two-byte", value_parser = parse_convention)]
    pub tcvn3: Tcvn3Convention,
}

/// Parses an encoding label for clap, listing the known ones on failure.
fn parse_encoding(s: &str) -> Result<Encoding, String> {
    Encoding::from_label(s).ok_or_else(|| {
        let known: Vec<&str> = Encoding::ALL.iter().map(|e| e.label()).collect();
        format!("unknown encoding {s:?}; known: {}", known.join(", "))
    })
}

/// Parses the `--tcvn3` convention name.
fn parse_convention(s: &str) -> Result<Tcvn3Convention, String> {
    match s.to_ascii_lowercase().as_str() {
        "two-byte" | "twobyte" | "2" => Ok(Tcvn3Convention::TwoByte),
        "single-byte" | "singlebyte" | "1" | "vn3" => Ok(Tcvn3Convention::SingleByte),
        _ => Err(format!(
            "unknown TCVN3 convention {s:?}; use two-byte or single-byte"
        )),
    }
}

/// Size of each read from stdin.
const CHUNK: usize = 64 * 1024;

/// Runs `convert`: stdin to stdout, returning the exit code (see module docs).
pub fn run(args: Args) -> anyhow::Result<u8> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    match convert(&args, stdin.lock(), stdout.lock()) {
        Ok(summary) => Ok(summary.exit_code(&args)),
        // `myrecode convert ... | head` closing the pipe is not an error.
        Err(e) if is_broken_pipe(&e) => Ok(EXIT_OK),
        Err(e) => Err(e),
    }
}

/// What a conversion replaced (always zero without `--replace`).
#[derive(Debug, Default)]
struct Summary {
    bad_bytes: usize,
    bad_chars: usize,
}

impl Summary {
    fn exit_code(&self, args: &Args) -> u8 {
        if self.bad_bytes + self.bad_chars == 0 {
            return EXIT_OK;
        }
        eprintln!(
            "myrecode: convert: replaced {} undecodable {} input sequence(s) and {} character(s) with no {} byte",
            self.bad_bytes, args.from, self.bad_chars, args.to
        );
        EXIT_ATTENTION
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == ErrorKind::BrokenPipe)
}

/// The streaming loop, over any reader and writer.
fn convert(args: &Args, mut input: impl Read, mut output: impl Write) -> anyhow::Result<Summary> {
    let mut decoder = if args.replace {
        Decoder::lossy(args.from)
    } else {
        Decoder::new(args.from)
    };
    let mut encoder = match args.to {
        Encoding::Tcvn3 => Encoder::tcvn3(args.tcvn3),
        enc => Encoder::new(enc),
    };
    if args.replace {
        encoder = encoder.into_lossy();
    }
    let mut buf = vec![0u8; CHUNK];
    let mut text = String::with_capacity(CHUNK * 3);
    let mut bytes = Vec::with_capacity(CHUNK * 3);
    // Text (bytes, characters) converted before the current piece, to turn
    // an encoder's text offset into a position in the input.
    let (mut text_done, mut chars_done) = (0usize, 0usize);
    loop {
        let n = match input.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow::Error::new(e).context("reading stdin")),
        };
        let last = n == 0;
        text.clear();
        let decoded = decoder.decode_to(&buf[..n], last, &mut text);
        // Write what decoded before reporting a bad byte: the output then ends
        // exactly where the bad input starts.
        let encoded = if args.to == Encoding::Utf8 {
            output
                .write_all(text.as_bytes())
                .map_err(anyhow::Error::new)?;
            Ok(())
        } else {
            bytes.clear();
            let r = encoder.encode_to(&text, &mut bytes);
            output.write_all(&bytes).map_err(anyhow::Error::new)?;
            r
        };
        if let Err(e) = encoded {
            return Err(encode_failure(
                args,
                &e,
                chars_done,
                &text,
                e.offset - text_done,
            ));
        }
        text_done += text.len();
        chars_done += text.chars().count();
        decoded.with_context(|| {
            format!(
                "stdin is not valid {} (use --replace to substitute)",
                args.from
            )
        })?;
        if last {
            break;
        }
    }
    output.flush().map_err(anyhow::Error::new)?;
    // With a legacy target, each U+FFFD the decoder wrote was then written
    // as '?' by the encoder: count it once, as a bad byte.
    let from_decoder = if args.to == Encoding::Utf8 {
        0
    } else {
        decoder.replacements()
    };
    Ok(Summary {
        bad_bytes: decoder.replacements(),
        bad_chars: encoder.replacements().saturating_sub(from_decoder),
    })
}

/// An error naming the character and where it is in the input.
fn encode_failure(
    args: &Args,
    e: &EncodeError,
    chars_before: usize,
    text: &str,
    local: usize,
) -> anyhow::Error {
    let index = chars_before + text[..local.min(text.len())].chars().count();
    let position = match args.from {
        // Input and text offsets coincide.
        Encoding::Utf8 => format!("input byte offset {}", e.offset),
        // One byte per character.
        enc if enc.is_single_byte() => format!("input byte offset {index}"),
        // A TCVN3 pair is two bytes for one character.
        _ => format!("input character {index}"),
    };
    anyhow::anyhow!(
        "{} ({position}); use --replace to write '?' instead",
        e.describe()
    )
}
