//! Blobs cut into bounded chunks and put back together (trajectories on the
//! worker session and in exports), so no message nears gRPC's size limit.
//!
//! An [`Assembler`] takes chunks in order: each names the blob's total size
//! (checked against a limit before anything is allocated) and its offset; a
//! chunk out of order or past the total is an error naming what was expected.

/// The most bytes of a blob one message carries.
pub const CHUNK_BYTES: usize = 256 << 10;

/// `(offset, piece)` of `blob` in order; one empty piece for an empty blob.
pub fn chunks(blob: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let n = blob.len().div_ceil(CHUNK_BYTES).max(1);
    (0..n).map(move |i| {
        let start = (i * CHUNK_BYTES).min(blob.len());
        let end = (start + CHUNK_BYTES).min(blob.len());
        (start as u64, &blob[start..end])
    })
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("blob of {total} bytes is past the limit of {limit} bytes")]
    TooLarge { total: u64, limit: usize },
    #[error("chunk at offset {got} where {expected} was expected")]
    OutOfOrder { expected: u64, got: u64 },
    #[error("chunk of {len} bytes at {offset} overruns the blob's {total} bytes")]
    Overrun { offset: u64, len: usize, total: u64 },
    #[error("chunk says the blob has {got} bytes where its first said {expected}")]
    Total { expected: u64, got: u64 },
}

/// One blob being put back together.
#[derive(Debug, Default)]
pub struct Assembler {
    total: u64,
    buf: Vec<u8>,
}

impl Assembler {
    /// Starts a blob of `total` bytes, refused past `limit`.
    pub fn new(total: u64, limit: usize) -> Result<Assembler, ChunkError> {
        if total > limit as u64 {
            return Err(ChunkError::TooLarge { total, limit });
        }
        Ok(Assembler { total, buf: Vec::with_capacity(total.min(CHUNK_BYTES as u64 * 4) as usize) })
    }

    /// Adds the next chunk; `Some(blob)` once the blob is whole.
    pub fn push(&mut self, total: u64, offset: u64, data: &[u8]) -> Result<Option<Vec<u8>>, ChunkError> {
        if total != self.total {
            return Err(ChunkError::Total { expected: self.total, got: total });
        }
        let at = self.buf.len() as u64;
        if offset != at {
            return Err(ChunkError::OutOfOrder { expected: at, got: offset });
        }
        if offset + data.len() as u64 > self.total {
            return Err(ChunkError::Overrun { offset, len: data.len(), total: self.total });
        }
        self.buf.extend_from_slice(data);
        Ok((self.buf.len() as u64 == self.total).then(|| std::mem::take(&mut self.buf)))
    }

    /// Whether this is the start of a blob (no byte taken yet).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_reassemble_and_are_bounded() {
        let blob: Vec<u8> = (0..(CHUNK_BYTES * 2 + 10)).map(|i| i as u8).collect();
        let parts: Vec<_> = chunks(&blob).collect();
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|(_, p)| p.len() <= CHUNK_BYTES));
        let mut a = Assembler::new(blob.len() as u64, 1 << 20).expect("new");
        let mut out = None;
        for (off, p) in parts {
            out = a.push(blob.len() as u64, off, p).expect("push");
        }
        assert_eq!(out, Some(blob));
        let empty: Vec<_> = chunks(&[]).collect();
        assert_eq!(empty, vec![(0, &[][..])]);
        assert_eq!(Assembler::new(0, 1).expect("new").push(0, 0, &[]), Ok(Some(Vec::new())));
    }

    #[test]
    fn bad_chunks_are_refused_naming_what_was_expected() {
        assert_eq!(Assembler::new(100, 10).err(), Some(ChunkError::TooLarge { total: 100, limit: 10 }));
        let mut a = Assembler::new(10, 100).expect("new");
        assert_eq!(a.push(10, 4, b"x"), Err(ChunkError::OutOfOrder { expected: 0, got: 4 }));
        assert_eq!(a.push(11, 0, b"x"), Err(ChunkError::Total { expected: 10, got: 11 }));
        assert_eq!(a.push(10, 0, &[0; 11]), Err(ChunkError::Overrun { offset: 0, len: 11, total: 10 }));
    }
}
