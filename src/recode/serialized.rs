//! PHP `serialize()` output kept in legacy-encoded text columns, recoded string by string.
//!
//! Legacy PHP applications (WordPress `wp_options`, Bitrix `b_option`, SMF, phpBB, MediaWiki)
//! store `serialize()` output in text columns. Its `s:N:"…";` counts are **byte** counts of the
//! stored bytes, whatever the encoding: recoding the whole value as text (cp1251 → UTF-8 makes
//! each Cyrillic letter two bytes) leaves every count short and `unserialize()` fails. So the
//! value is parsed, each string payload is recoded on its own, and its count is written anew,
//! as are the byte counts of class names (`O:N:"…"`, `E:N:"…"`) and custom payloads (`C:…:M:{…}`).
//!
//! Grammar accepted (that of PHP's `var_unserializer.re`, minus forms `serialize()` never
//! writes): `N;` `b:0;` `b:1;` `i:-12;` `d:0.5;` `d:1.0E+25;` `d:INF;` `d:-INF;` `d:NAN;`
//! `s:N:"<N bytes>";` `a:N:{<key><value>…}` (keys `i:` or `s:`) `O:N:"Class":M:{<name><value>…}`
//! (mangled names `\0Class\0p`, `\0*\0p` count their NULs) `C:N:"Class":M:{<M bytes>}` `r:N;`
//! `R:N;` `E:N:"Enum:Case";`. Counts with a leading zero are refused, so that a value whose
//! strings do not change renders back to its exact input.
//!
//! Everything that is not a count or a payload is copied from the input byte for byte. Numbers
//! are never re-rendered: `d:` text depends on the writing server's `serialize_precision`
//! (`0.1` vs `0.1000000000000000055511151231257827`), and a verify comparing bytes must see the
//! very digits it read.
//!
//! Parsing is strict because a value that was already recoded naively can still parse by
//! accident when a `";` falls where an old count ends: a string must end with `";` after
//! exactly N bytes, and the whole input must be one value with nothing after it.
//!
//! Decisions: class and enum names are never recoded, since they must match the PHP code, which
//! this tool does not touch; a non-ASCII one makes the value not recodable. Property names are
//! offered to the mapping only when non-ASCII (dynamic properties of `stdClass`, from casting
//! arrays to objects, carry data keys), and only the part after the mangling prefix. A `C:`
//! payload is recoded when it parses as a sequence of serialized values; otherwise it is kept as
//! is if ASCII (nothing legacy in it) and makes the value not recodable if not.

use std::fmt;

/// How deep arrays, objects and custom payloads may nest before a value is refused.
pub const MAX_DEPTH: usize = 512;

/// A value recoded string by string, with every byte count rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recoded {
    /// The new stored bytes; the input itself when nothing changed.
    pub bytes: Vec<u8>,
    /// Whether any payload changed.
    pub changed: bool,
    /// How many payloads were offered to the mapping.
    pub strings: usize,
}

/// Why a value that is (or looks) PHP-serialized cannot be recoded string by string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRecodable {
    /// Byte offset in the stored value where the problem was found.
    pub at: usize,
    /// One sentence for the quarantine report, ending with the offset.
    pub reason: String,
}

impl fmt::Display for NotRecodable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for NotRecodable {}

type Res<T> = Result<T, NotRecodable>;

fn refuse<T>(at: usize, what: &str) -> Res<T> {
    Err(NotRecodable {
        at,
        reason: format!("looks PHP-serialized but {what} at byte {at}"),
    })
}

/// What a string payload is, which decides whether the mapping sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A value or an array key: always offered.
    Data,
    /// An object property name: offered only when non-ASCII, without its mangling prefix.
    Prop,
}

/// One piece of a parsed value, in input order; rendering the pieces rebuilds the value.
#[derive(Debug)]
enum Ev<'a> {
    /// Bytes without a byte count, copied verbatim: scalars, `a:N:{`, `:M:{` of objects, `}`.
    Raw(&'a [u8]),
    /// A `s:N:"…";` payload.
    Str(Role, &'a [u8]),
    /// `O`, `C` or `E` with its quoted name and its offset; rendered `T:N:"name"`.
    Name(u8, usize, &'a [u8]),
    /// Start of a `C:` payload that parsed as serialized values.
    Open,
    /// End of such a payload; its `:M:{…}` is rendered once its length is known.
    Close,
    /// A `C:` payload that did not parse, with its offset.
    Opaque(usize, &'a [u8]),
}

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
    /// End of the current region: the input, or a `C:` payload being tried.
    end: usize,
    evs: Vec<Ev<'a>>,
}

impl<'a> Parser<'a> {
    fn fail<T>(&self, what: &str) -> Res<T> {
        if self.pos >= self.end {
            refuse(self.pos, "the value ends early (truncated?)")
        } else {
            refuse(self.pos, what)
        }
    }

    fn expect(&mut self, lit: &[u8]) -> Res<()> {
        for &c in lit {
            if self.pos >= self.end || self.buf[self.pos] != c {
                return self.fail(&format!("`{}` is missing", c as char));
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn count(&mut self) -> Res<usize> {
        let start = self.pos;
        let mut n: usize = 0;
        while self.pos < self.end && self.buf[self.pos].is_ascii_digit() {
            let d = usize::from(self.buf[self.pos] - b'0');
            n = match n.checked_mul(10).and_then(|n| n.checked_add(d)) {
                Some(n) => n,
                None => return refuse(start, "a count is too large"),
            };
            self.pos += 1;
        }
        match self.pos - start {
            0 => self.fail("a count is missing"),
            1 => Ok(n),
            _ if self.buf[start] == b'0' => refuse(start, "a count has a leading zero"),
            _ => Ok(n),
        }
    }

    /// Parses `N:"<N bytes>"` and returns the bytes.
    fn quoted(&mut self) -> Res<&'a [u8]> {
        let at = self.pos;
        let n = self.count()?;
        self.expect(b":\"")?;
        let start = self.pos;
        match start.checked_add(n) {
            Some(stop) if stop < self.end && self.buf[stop] == b'"' => {
                self.pos = stop + 1;
                Ok(&self.buf[start..stop])
            }
            _ => refuse(at, &format!("the count {n} does not match its string")),
        }
    }

    /// Parses the body of `i:` or `d:` up to its `;`, checked by `valid`.
    fn number(&mut self, valid: fn(&[u8]) -> bool) -> Res<()> {
        let start = self.pos;
        let region = &self.buf[start..self.end];
        match region.iter().position(|&c| c == b';') {
            Some(len) if valid(&region[..len]) => {
                self.pos = start + len + 1;
                Ok(())
            }
            Some(_) => refuse(start, "a number is malformed"),
            None => self.fail("a number has no `;`"),
        }
    }

    fn key(&mut self, role: Role) -> Res<()> {
        let start = self.pos;
        match self.buf.get(self.pos).filter(|_| self.pos < self.end) {
            Some(b'i') => {
                self.expect(b"i:")?;
                self.number(is_int)?;
                self.evs.push(Ev::Raw(&self.buf[start..self.pos]));
            }
            Some(b's') => {
                self.expect(b"s:")?;
                let p = self.quoted()?;
                self.expect(b";")?;
                self.evs.push(Ev::Str(role, p));
            }
            _ => return self.fail("a key is neither `i:` nor `s:`"),
        }
        Ok(())
    }

    /// Parses one value; a container's header only, returning the frame its contents need.
    fn value(&mut self, depth: usize) -> Res<Option<Frame>> {
        let start = self.pos;
        let Some(&tag) = self.buf.get(start).filter(|_| start < self.end) else {
            return self.fail("a value is missing");
        };
        if matches!(tag, b'a' | b'O' | b'C') && depth >= MAX_DEPTH {
            return refuse(start, &format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match tag {
            b'N' => self.expect(b"N;")?,
            b'b' => {
                self.expect(b"b:")?;
                self.number(|s| s == b"0" || s == b"1")?;
            }
            b'i' => {
                self.expect(b"i:")?;
                self.number(is_int)?;
            }
            b'd' => {
                self.expect(b"d:")?;
                self.number(is_double)?;
            }
            b'r' | b'R' => {
                self.expect(&[tag, b':'])?;
                self.count()?;
                self.expect(b";")?;
            }
            b's' | b'E' => {
                self.expect(&[tag, b':'])?;
                let p = self.quoted()?;
                self.expect(b";")?;
                if tag == b's' {
                    self.evs.push(Ev::Str(Role::Data, p));
                } else if p.contains(&b':') {
                    self.evs.push(Ev::Name(tag, start, p));
                    self.evs.push(Ev::Raw(b";"));
                } else {
                    return refuse(start, "an enum has no `Class:Case` name");
                }
                return Ok(None);
            }
            b'a' => {
                self.expect(b"a:")?;
                let left = self.count()?;
                self.expect(b":{")?;
                self.evs.push(Ev::Raw(&self.buf[start..self.pos]));
                return Ok(Some(Frame::Pairs {
                    left,
                    role: Role::Data,
                    key_next: true,
                }));
            }
            b'O' | b'C' => {
                self.expect(&[tag, b':'])?;
                let class = self.quoted()?;
                self.evs.push(Ev::Name(tag, start, class));
                let head = self.pos;
                self.expect(b":")?;
                let n = self.count()?;
                self.expect(b":{")?;
                if tag == b'O' {
                    self.evs.push(Ev::Raw(&self.buf[head..self.pos]));
                    return Ok(Some(Frame::Pairs {
                        left: n,
                        role: Role::Prop,
                        key_next: true,
                    }));
                }
                let stop = match self.pos.checked_add(n) {
                    Some(stop) if stop < self.end && self.buf[stop] == b'}' => stop,
                    _ => {
                        return refuse(
                            head,
                            &format!("the custom payload count {n} does not match"),
                        )
                    }
                };
                let frame = Frame::Custom {
                    start: self.pos,
                    stop,
                    outer: self.end,
                    mark: self.evs.len(),
                };
                self.evs.push(Ev::Open);
                self.end = stop;
                return Ok(Some(frame));
            }
            _ => return self.fail("an unknown type tag is found"),
        }
        self.evs.push(Ev::Raw(&self.buf[start..self.pos]));
        Ok(None)
    }

    /// Parses the next piece inside the innermost open container; true once the value is whole.
    fn step(&mut self, stack: &mut Vec<Frame>) -> Res<bool> {
        match stack.last_mut() {
            None if !self.evs.is_empty() => return Ok(true),
            None => {}
            Some(Frame::Pairs {
                left,
                role,
                key_next,
            }) if *key_next => {
                if *left == 0 {
                    self.expect(b"}")?;
                    self.evs.push(Ev::Raw(b"}"));
                    stack.pop();
                } else {
                    *left -= 1;
                    *key_next = false;
                    let role = *role;
                    self.key(role)?;
                }
                return Ok(false);
            }
            Some(Frame::Pairs { key_next, .. }) => *key_next = true,
            Some(&mut Frame::Custom { stop, outer, .. }) if self.pos >= stop => {
                self.end = outer;
                self.pos = stop + 1;
                self.evs.push(Ev::Close);
                stack.pop();
                return Ok(false);
            }
            Some(Frame::Custom { .. }) => {}
        }
        if let Some(frame) = self.value(stack.len())? {
            stack.push(frame);
        }
        Ok(false)
    }

    /// Parses one whole value without recursion, so hostile nesting cannot blow the stack.
    fn run(&mut self) -> Res<()> {
        let mut stack = Vec::new();
        loop {
            match self.step(&mut stack) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    // A `C:` payload that is not serialize output is opaque, not an error.
                    let Some(i) = stack
                        .iter()
                        .rposition(|f| matches!(f, Frame::Custom { .. }))
                    else {
                        return Err(e);
                    };
                    if let Frame::Custom {
                        start,
                        stop,
                        outer,
                        mark,
                    } = stack[i]
                    {
                        self.evs.truncate(mark);
                        self.evs.push(Ev::Opaque(start, &self.buf[start..stop]));
                        (self.end, self.pos) = (outer, stop + 1);
                    }
                    stack.truncate(i);
                }
            }
        }
    }
}

/// An open container: pairs still to read, or a `C:` payload region and where it began.
#[derive(Debug, Clone, Copy)]
enum Frame {
    Pairs {
        left: usize,
        role: Role,
        key_next: bool,
    },
    Custom {
        start: usize,
        stop: usize,
        outer: usize,
        mark: usize,
    },
}

fn is_int(s: &[u8]) -> bool {
    let digits = s.strip_prefix(b"-").or(s.strip_prefix(b"+")).unwrap_or(s);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// PHP's `d:` forms: `NAN`, `INF`, `-INF`, or a decimal with optional fraction and exponent.
fn is_double(s: &[u8]) -> bool {
    if matches!(s, b"NAN" | b"INF" | b"-INF") {
        return true;
    }
    let (mant, exp) = match s.iter().position(|&c| c == b'e' || c == b'E') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let body = mant
        .strip_prefix(b"-")
        .or(mant.strip_prefix(b"+"))
        .unwrap_or(mant);
    let (int, frac) = match body.iter().position(|&c| c == b'.') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &b""[..]),
    };
    let digits = |x: &[u8]| x.iter().all(u8::is_ascii_digit);
    digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty()) && exp.is_none_or(is_int)
}

fn parse(stored: &[u8]) -> Res<Vec<Ev<'_>>> {
    let mut p = Parser {
        buf: stored,
        pos: 0,
        end: stored.len(),
        evs: Vec::new(),
    };
    p.run()?;
    if p.pos != stored.len() {
        return refuse(p.pos, "bytes follow the value");
    }
    Ok(p.evs)
}

/// Splits a payload into the part kept as is and the rest, and tells if the rest is offered to
/// the mapping.
fn split(role: Role, p: &[u8]) -> (&[u8], &[u8], bool) {
    if role != Role::Prop {
        return (&[], p, true);
    }
    // A mangled name `\0Class\0name` or `\0*\0name` keeps its prefix: it names the class.
    let cut = match p.first() {
        Some(0) => p.iter().rposition(|&c| c == 0).map_or(0, |i| i + 1),
        _ => 0,
    };
    let (prefix, name) = p.split_at(cut);
    (prefix, name, !name.is_ascii())
}

fn push_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(n.to_string().as_bytes());
}

/// Rebuilds a value; `new[k]`, when set, replaces the payload of the k-th `Str`.
fn render(evs: &[Ev], new: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut outer: Vec<Vec<u8>> = Vec::new();
    let mut k = 0;
    let custom = |out: &mut Vec<u8>, payload: &[u8]| {
        out.push(b':');
        push_count(out, payload.len());
        out.extend_from_slice(b":{");
        out.extend_from_slice(payload);
        out.push(b'}');
    };
    for ev in evs {
        match ev {
            Ev::Raw(b) => out.extend_from_slice(b),
            Ev::Str(_, p) => {
                let p = new.get(k).and_then(Option::as_deref).unwrap_or(p);
                k += 1;
                out.extend_from_slice(b"s:");
                push_count(&mut out, p.len());
                out.extend_from_slice(b":\"");
                out.extend_from_slice(p);
                out.extend_from_slice(b"\";");
            }
            Ev::Name(tag, _, name) => {
                out.extend_from_slice(&[*tag, b':']);
                push_count(&mut out, name.len());
                out.extend_from_slice(b":\"");
                out.extend_from_slice(name);
                out.push(b'"');
            }
            Ev::Open => outer.push(std::mem::take(&mut out)),
            Ev::Close => {
                let payload = std::mem::replace(&mut out, outer.pop().unwrap_or_default());
                custom(&mut out, &payload);
            }
            Ev::Opaque(_, p) => custom(&mut out, p),
        }
    }
    out
}

/// Parses and refuses what cannot be recoded, before any payload is mapped.
fn prepare(stored: &[u8]) -> Res<Vec<Ev<'_>>> {
    let evs = parse(stored)?;
    for ev in &evs {
        match ev {
            Ev::Name(tag, at, name) if !name.is_ascii() => {
                let what = format!(
                    "the {} name is non-ASCII and must match PHP code",
                    *tag as char
                );
                return refuse(*at, &what);
            }
            Ev::Opaque(at, p) if !p.is_ascii() => {
                return refuse(*at, "a custom-serialized object C:… has an opaque payload");
            }
            _ => {}
        }
    }
    Ok(evs)
}

/// True when a value starts like `serialize()` output, so a failed parse means quarantine.
pub fn looks_serialized(stored: &[u8]) -> bool {
    match stored {
        [tag @ (b'a' | b'O' | b's' | b'C' | b'E'), b':', rest @ ..] => {
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            let opener = if *tag == b'a' { b'{' } else { b'"' };
            digits > 0 && rest.get(digits) == Some(&b':') && rest.get(digits + 1) == Some(&opener)
        }
        [b'N' | b'b' | b'i' | b'd', ..] => parse(stored).is_ok(),
        _ => false,
    }
}

/// The payloads `recode` would offer to its mapping, in order; for detecting their encoding.
pub fn payloads(stored: &[u8]) -> Result<Vec<&[u8]>, NotRecodable> {
    let evs = prepare(stored)?;
    Ok(evs
        .iter()
        .filter_map(|ev| match ev {
            Ev::Str(role, p) => Some(split(*role, p)).filter(|s| s.2).map(|s| s.1),
            _ => None,
        })
        .collect())
}

/// Recodes every payload through `f` (None keeps it) and rewrites every byte count.
///
/// `f` decides what needs recoding: it should return None for a payload already in the target
/// encoding, so that a value recoded earlier comes back unchanged.
pub fn recode(
    stored: &[u8],
    mut f: impl FnMut(&[u8]) -> Option<Vec<u8>>,
) -> Result<Recoded, NotRecodable> {
    let evs = prepare(stored)?;
    let mut new = Vec::new();
    let mut strings = 0;
    for ev in &evs {
        if let Ev::Str(role, p) = ev {
            let (prefix, name, offer) = split(*role, p);
            strings += usize::from(offer);
            let mapped = Some(name)
                .filter(|_| offer)
                .and_then(&mut f)
                .filter(|n| n.as_slice() != name);
            new.push(mapped.map(|n| [prefix, &n].concat()));
        }
    }
    let changed = new.iter().any(Option::is_some);
    let bytes = if changed {
        render(&evs, &new)
    } else {
        stored.to_vec()
    };
    Ok(Recoded {
        bytes,
        changed,
        strings,
    })
}

/// True when both values parse to the same structure, byte-exact outside the payloads, and
/// `each(old, new)` holds for every pair of payloads the mapping of `recode` was offered.
pub fn same_shape(
    original: &[u8],
    recoded: &[u8],
    mut each: impl FnMut(&[u8], &[u8]) -> bool,
) -> bool {
    let (Ok(a), Ok(b)) = (parse(original), parse(recoded)) else {
        return false;
    };
    a.len() == b.len()
        && a.iter().zip(&b).all(|pair| match pair {
            (Ev::Raw(x), Ev::Raw(y)) => x == y,
            (Ev::Str(r, x), Ev::Str(s, y)) if r == s => match (split(*r, x), split(*s, y)) {
                ((px, x, true), (py, y, _)) => px == py && each(x, y),
                _ => x == y,
            },
            (Ev::Name(t, _, x), Ev::Name(u, _, y)) => t == u && x == y,
            (Ev::Open, Ev::Open) | (Ev::Close, Ev::Close) => true,
            (Ev::Opaque(_, x), Ev::Opaque(_, y)) => x == y,
            _ => false,
        })
}

#[cfg(test)]
mod tests;
