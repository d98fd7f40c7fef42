//! Packs a row's key (one byte string per key column) into one byte string for the `_myrecode_*` tables.

/// Packs key parts as `len (u32 LE) | bytes` each, so any bytes round-trip.
pub fn pack(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Unpacks what [`pack`] wrote; `None` if the bytes are not a packed key.
pub fn unpack(mut bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut parts = Vec::new();
    while !bytes.is_empty() {
        let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        parts.push(bytes.get(4..4 + len)?.to_vec());
        bytes = &bytes[4 + len..];
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_any_bytes() {
        let parts = vec![b"12".to_vec(), vec![], vec![0, 0xff, 4, 0, 0, 0]];
        assert_eq!(unpack(&pack(&parts)).unwrap(), parts);
        assert_eq!(unpack(&[1, 0, 0]), None);
    }
}
