//! A trajectory with its screenshots as one compressed blob: what the worker's
//! outbox keeps, what travels (in chunks) to the coordinator, and what an
//! export receives (docs/design.md, trajectories).
//!
//! Layout before compression (zstd): the trajectory's JSON, its length first
//! (u32 big-endian), then each screenshot as its SHA-256 in hex (64 bytes), its
//! length (u32 big-endian) and its PNG bytes. Decoding is bounded: a blob that
//! inflates past the given limit is refused, so a hostile or broken one cannot
//! exhaust memory.

use std::collections::BTreeMap;
use std::io::Read;

use sha2::{Digest, Sha256};

use crate::trajectory::Trajectory;

/// The largest compressed blob the coordinator accepts by default.
pub const MAX_BLOB_BYTES: usize = 64 << 20;
/// The largest a blob may inflate to.
pub const MAX_INFLATED_BYTES: usize = 512 << 20;
/// The zstd level: fast, and text compresses well at it.
const LEVEL: i32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("trajectory blob: {0}")]
    Codec(String),
    #[error("trajectory blob: inflates past {limit} bytes")]
    TooLarge { limit: usize },
    #[error("trajectory blob: truncated at byte {at}")]
    Truncated { at: usize },
    #[error("trajectory blob: screenshot {digest} does not match its bytes")]
    Digest { digest: String },
}

/// A trajectory and the screenshots its steps name, by SHA-256 (hex).
#[derive(Debug, Clone, PartialEq)]
pub struct Blob {
    pub trajectory: Trajectory,
    pub screenshots: BTreeMap<String, Vec<u8>>,
}

/// The SHA-256 of `bytes`, in hex.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Blob {
    /// The compressed blob.
    pub fn encode(&self) -> Result<Vec<u8>, BlobError> {
        let json = serde_json::to_vec(&self.trajectory).map_err(|e| BlobError::Codec(e.to_string()))?;
        let mut raw =
            Vec::with_capacity(json.len() + 4 + self.screenshots.values().map(|p| p.len() + 68).sum::<usize>());
        push_len(&mut raw, json.len())?;
        raw.extend_from_slice(&json);
        for (digest, png) in &self.screenshots {
            if digest.len() != 64 {
                return Err(BlobError::Digest { digest: digest.clone() });
            }
            raw.extend_from_slice(digest.as_bytes());
            push_len(&mut raw, png.len())?;
            raw.extend_from_slice(png);
        }
        zstd::bulk::compress(&raw, LEVEL).map_err(|e| BlobError::Codec(e.to_string()))
    }

    /// Reads a blob that inflates to at most `limit` bytes; checks every screenshot's digest.
    pub fn decode(bytes: &[u8], limit: usize) -> Result<Blob, BlobError> {
        let raw = inflate(bytes, limit)?;
        let (json, mut at) = take(&raw, 0)?;
        let trajectory: Trajectory = serde_json::from_slice(json).map_err(|e| BlobError::Codec(e.to_string()))?;
        let mut screenshots = BTreeMap::new();
        while at < raw.len() {
            let name = raw.get(at..at + 64).ok_or(BlobError::Truncated { at })?;
            let name = String::from_utf8_lossy(name).into_owned();
            let (png, next) = take(&raw, at + 64)?;
            if digest(png) != name {
                return Err(BlobError::Digest { digest: name });
            }
            screenshots.insert(name, png.to_vec());
            at = next;
        }
        Ok(Blob { trajectory, screenshots })
    }
}

/// A trajectory's JSON, compressed: how the coordinator stores it.
pub fn compress(t: &Trajectory) -> Result<Vec<u8>, BlobError> {
    let json = serde_json::to_vec(t).map_err(|e| BlobError::Codec(e.to_string()))?;
    zstd::bulk::compress(&json, LEVEL).map_err(|e| BlobError::Codec(e.to_string()))
}

/// The trajectory [`compress`] stored, inflating to at most `limit` bytes.
pub fn decompress(bytes: &[u8], limit: usize) -> Result<Trajectory, BlobError> {
    let json = inflate(bytes, limit)?;
    serde_json::from_slice(&json).map_err(|e| BlobError::Codec(e.to_string()))
}

fn inflate(bytes: &[u8], limit: usize) -> Result<Vec<u8>, BlobError> {
    let decoder = zstd::stream::read::Decoder::new(bytes).map_err(|e| BlobError::Codec(e.to_string()))?;
    let mut out = Vec::new();
    decoder.take(limit as u64 + 1).read_to_end(&mut out).map_err(|e| BlobError::Codec(e.to_string()))?;
    if out.len() > limit {
        return Err(BlobError::TooLarge { limit });
    }
    Ok(out)
}

fn push_len(out: &mut Vec<u8>, len: usize) -> Result<(), BlobError> {
    let n = u32::try_from(len).map_err(|_| BlobError::TooLarge { limit: u32::MAX as usize })?;
    out.extend_from_slice(&n.to_be_bytes());
    Ok(())
}

/// The length-prefixed part at `at`, and where the next one starts.
fn take(raw: &[u8], at: usize) -> Result<(&[u8], usize), BlobError> {
    let len = raw.get(at..at + 4).ok_or(BlobError::Truncated { at })?;
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let start = at + 4;
    let part = raw.get(start..start + len).ok_or(BlobError::Truncated { at: start })?;
    Ok((part, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt::AttemptSpec;
    use crate::ids::{Condition, Uid};

    fn trajectory() -> Trajectory {
        let spec = AttemptSpec {
            sweep: "s".into(),
            treatment: "T".into(),
            uid: "skillshift.gitlab.v1.2".parse::<Uid>().expect("uid"),
            condition: Condition::Src,
            rep: 0,
            attempt: 0,
            seed: 0,
            max_steps: 10,
            task_timeout_ms: 1,
            agent: "skills".into(),
            model: None,
            skills: None,
            perturbation_profile: None,
            config_digest: None,
            traceparent: None,
            temperature: None,
            prompt_version: None,
        };
        Trajectory::for_attempt(&spec, &"x".repeat(100_000), "http://x/", "skills")
    }

    #[test]
    fn a_blob_round_trips_and_compresses_text() {
        let png = b"\x89PNG fake".to_vec();
        let blob = Blob { trajectory: trajectory(), screenshots: BTreeMap::from([(digest(&png), png)]) };
        let bytes = blob.encode().expect("encode");
        assert!(bytes.len() < 10_000, "100 kB of text compresses: {} bytes", bytes.len());
        assert_eq!(Blob::decode(&bytes, 1 << 20).expect("decode"), blob);
        assert!(matches!(Blob::decode(&bytes, 1000), Err(BlobError::TooLarge { limit: 1000 })));
        assert!(Blob::decode(&bytes[..bytes.len() / 2], 1 << 20).is_err());
        let t = trajectory();
        assert_eq!(decompress(&compress(&t).expect("compress"), 1 << 20).expect("decompress"), t);
    }

    #[test]
    fn a_screenshot_under_another_digest_is_refused() {
        let blob = Blob { trajectory: trajectory(), screenshots: BTreeMap::from([("0".repeat(64), b"png".to_vec())]) };
        let bytes = blob.encode().expect("encode");
        assert!(matches!(Blob::decode(&bytes, 1 << 20), Err(BlobError::Digest { .. })));
    }
}
