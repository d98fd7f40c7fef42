//! Renders results for people (terminal tables) and programs (JSON); no I/O besides writing.
