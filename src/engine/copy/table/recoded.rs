//! What the copy decided one stored value becomes, and a row's decisions: the words the
//! deciding, the writing and the check's sums share. Pure.

/// How the copy writes one job value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stage {
    /// The column's default: the server's conversion ([`crate::engine::copy::table::job_column::JobColumn::default_expr`]), which
    /// gives exactly our decision: the recoded bytes when it recodes (for the check's sums,
    /// [`crate::engine::copy::table::expect`]), `None` when it keeps them.
    Server(Option<Vec<u8>>),
    /// The server's conversion under another of its charsets ([`crate::engine::copy::table::decide::Decider::others`]`[i]`),
    /// which gives exactly these recoded bytes (a KOI8-R value in a cp1251 column).
    Other(usize, Vec<u8>),
    /// These bytes, staged.
    Value(Vec<u8>),
    /// The server's conversion from the declared charset (the latin1 reading: kept, reversible).
    Declared,
}

/// What one stored value becomes in the shadow.
#[derive(Clone)]
pub(crate) struct Recoded {
    /// How it is written.
    pub(crate) stage: Stage,
    /// Whether the value was recoded (not just kept).
    pub(crate) recoded: bool,
    /// Why and the runner-up, when undecidable (it is quarantined).
    pub(crate) undecidable: Option<(String, Option<String>)>,
}

/// Per job column of one row: the stored bytes and what they become (`None`: NULL).
pub(crate) type Decisions = Vec<Option<(Vec<u8>, Recoded)>>;
