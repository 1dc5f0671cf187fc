//! A worker session's trajectory chunks put back together
//! (`docs/design.md`, trajectories): one blob at a time, as the worker sends
//! them, its declared size checked against the limit before anything is
//! allocated. The session reader asks the engine whether the worker may
//! upload for the attempt before the first chunk is kept, and refuses the
//! blob here ([`Uploads::refuse`]) when not. A whole blob is decoded (off the
//! async threads, at most [`crate::limits::MAX_CONCURRENT_DECODES`] at
//! once, within [`blob::Limits::DEFAULT`]) into what the store keeps: the
//! trajectory's JSON recompressed alone, its screenshots by digest, and the
//! blob's digest with the bytes charged to the sweep.

use std::sync::Arc;

use skillshift_common::blob::{self, Blob, BlobError};
use skillshift_common::ids::AttemptKey;
use skillshift_common::trajectory::Key;
use skillshift_proto::chunks::{Assembler, ChunkError};
use skillshift_proto::convert::{self, WireError};
use skillshift_proto::v1;

use crate::store::{StoredTrajectory, TrajectoryRow};

/// What one chunk did.
#[derive(Debug)]
pub enum Chunked {
    /// The blob is not whole yet (or the chunk belongs to a refused one).
    More,
    /// The blob is whole.
    Whole(AttemptKey, Vec<u8>),
    /// The blob is refused for good; `true` when past the size limit.
    Refused(AttemptKey, String, bool),
}

/// A chunk that cannot be taken at all (the session logs it and drops it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MalformedChunk {
    /// It names no attempt, or a malformed one.
    #[error("trajectory chunk: {0}")]
    NoAttempt(#[from] WireError),
}

/// The blob a session is receiving.
pub struct Uploads {
    limit: usize,
    open: Option<(AttemptKey, Assembler)>,
    /// The last refused blob, whose remaining chunks are dropped.
    refused: Option<AttemptKey>,
}

impl Uploads {
    pub fn new(limit: usize) -> Uploads {
        Uploads { limit, open: None, refused: None }
    }

    /// Takes one chunk. `Err` is a chunk naming no attempt.
    pub fn push(&mut self, c: v1::TrajectoryChunk) -> Result<Chunked, MalformedChunk> {
        let key = convert::attempt_key_from_wire(c.attempt)?;
        if c.offset == 0 {
            // A new blob (or this one again from its start) replaces any unfinished one.
            self.open = None;
            self.refused = None;
            match Assembler::new(c.total_bytes, self.limit) {
                Ok(a) => self.open = Some((key.clone(), a)),
                Err(e) => return Ok(self.refuse_chunk(key, &e)),
            }
        } else if self.refused.as_ref() == Some(&key) {
            return Ok(Chunked::More);
        }
        let Some((open, assembler)) = self.open.as_mut().filter(|(k, _)| *k == key) else {
            let e = ChunkError::OutOfOrder { expected: 0, got: c.offset };
            return Ok(self.refuse_chunk(key, &e));
        };
        match assembler.push(c.total_bytes, c.offset, &c.data) {
            Ok(None) => Ok(Chunked::More),
            Ok(Some(bytes)) => {
                let key = open.clone();
                self.open = None;
                Ok(Chunked::Whole(key, bytes))
            }
            Err(e) => Ok(self.refuse_chunk(key, &e)),
        }
    }

    /// Refuses the blob `key` starts (its chunks are dropped until another begins).
    pub fn refuse(&mut self, key: AttemptKey) {
        self.open = None;
        self.refused = Some(key);
    }

    fn refuse_chunk(&mut self, key: AttemptKey, e: &ChunkError) -> Chunked {
        self.refuse(key.clone());
        Chunked::Refused(key, format!("trajectory refused: {e}"), matches!(e, ChunkError::TooLarge { .. }))
    }
}

/// The SHA-256 (hex) of a whole blob, as it came: what a re-upload is compared by, before any inflation.
pub fn blob_sha256(bytes: &[u8]) -> String {
    blob::digest(bytes)
}

/// Decodes a whole blob (whose SHA-256 is `sha256`) into what the store keeps and the key the
/// trajectory names, within [`blob::Limits::DEFAULT`]. Blocking.
pub fn decode(bytes: &[u8], sha256: String) -> Result<(Key, Arc<StoredTrajectory>), BlobError> {
    let b = Blob::decode(bytes, &blob::Limits::DEFAULT)?;
    let compressed = blob::compress(&b.trajectory)?;
    let charged = compressed.len() as u64 + b.screenshots.values().map(|p| p.len() as u64).sum::<u64>();
    let row = TrajectoryRow { blob_sha256: sha256, bytes: charged };
    let stored = StoredTrajectory { compressed, screenshots: b.screenshots.into_iter().collect(), row };
    Ok((b.trajectory.key, Arc::new(stored)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(unit: u32, total: u64, offset: u64, data: &[u8]) -> v1::TrajectoryChunk {
        v1::TrajectoryChunk {
            attempt: Some(v1::AttemptRef { sweep: "sw".into(), unit, attempt: 0 }),
            total_bytes: total,
            offset,
            data: data.to_vec(),
        }
    }

    #[test]
    fn chunks_become_one_blob_and_an_oversized_one_is_refused_as_too_large() {
        let mut u = Uploads::new(10);
        assert!(matches!(u.push(chunk(1, 6, 0, b"abc")), Ok(Chunked::More)));
        match u.push(chunk(1, 6, 3, b"def")) {
            Ok(Chunked::Whole(k, b)) => assert_eq!((k.unit, b), (1, b"abcdef".to_vec())),
            other => panic!("expected a whole blob, got {other:?}"),
        }
        match u.push(chunk(2, 11, 0, b"x")) {
            Ok(Chunked::Refused(k, reason, too_large)) => {
                assert_eq!(k.unit, 2);
                assert!(too_large, "{reason}");
                assert!(reason.contains("past the limit of 10 bytes"), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(matches!(u.push(chunk(2, 11, 1, b"y")), Ok(Chunked::More)), "the rest of a refused blob is dropped");
        assert!(matches!(u.push(chunk(3, 4, 2, b"zz")), Ok(Chunked::Refused(_, _, false))), "no start");
        assert!(u.push(v1::TrajectoryChunk::default()).is_err());
    }
}
