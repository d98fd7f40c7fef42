//! Single- and multi-byte codecs, our own: table-driven, exact, no I/O.
