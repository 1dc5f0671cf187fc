//! A trajectory with its screenshots as one compressed blob: what the worker's
//! outbox keeps, what travels (in chunks) to the coordinator, and what an
//! export receives (docs/design.md, trajectories).
//!
//! Layout before compression (zstd): the trajectory's JSON, its length first
//! (u32 big-endian), then each screenshot as its SHA-256 in hex (64 bytes), its
//! length (u32 big-endian) and its PNG bytes.
//!
//! Decoding streams ([`Blob::decode`]): each part's declared length is checked
//! against its own bound before it is read, so a hostile or broken blob is
//! refused having inflated no more than the part that crossed a bound. The
//! bounds ([`Limits`]): the trajectory's JSON at most
//! [`MAX_TRAJECTORY_JSON_BYTES`], each screenshot at most
//! [`MAX_SCREENSHOT_BYTES`], the whole at most [`MAX_INFLATED_BYTES`]; and a
//! screenshot is taken only when a step of the trajectory names it, once.

use std::collections::BTreeMap;
use std::io::Read;

use sha2::{Digest, Sha256};

use crate::trajectory::Trajectory;

/// The largest compressed blob the coordinator accepts by default.
pub const MAX_BLOB_BYTES: usize = 64 << 20;
/// The largest a trajectory's JSON may be: 16 MiB. A full fixture grid's 710
/// trajectories are 6.8 kB to 96 kB (median 12.5 kB); a real site's page gives
/// observations of tens of kB a step (docs/reliability.md#uploads), so 16 MiB
/// holds a long attempt on a large page many times over.
pub const MAX_TRAJECTORY_JSON_BYTES: usize = 16 << 20;
/// The largest one screenshot may be: 8 MiB. The fixture grid's 82 are 30 kB to
/// 150 kB; a 1280x720 PNG of a real page is well under 2 MiB.
pub const MAX_SCREENSHOT_BYTES: usize = 8 << 20;
/// The largest a whole blob may inflate to: 64 MiB (the JSON and every screenshot).
pub const MAX_INFLATED_BYTES: usize = 64 << 20;
/// What a store written before these bounds may hold (its inflate limit was
/// 512 MiB); only an export, one trajectory at a time, reads that far.
pub const MAX_STORED_JSON_BYTES: usize = 512 << 20;
/// The zstd level: fast, and text compresses well at it.
const LEVEL: i32 = 3;

/// The bounds [`Blob::decode`] enforces, each in inflated bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The trajectory's JSON.
    pub json: usize,
    /// Each screenshot.
    pub screenshot: usize,
    /// The whole blob.
    pub total: usize,
}

impl Limits {
    /// The bounds the coordinator enforces and the worker encodes within.
    pub const DEFAULT: Limits =
        Limits { json: MAX_TRAJECTORY_JSON_BYTES, screenshot: MAX_SCREENSHOT_BYTES, total: MAX_INFLATED_BYTES };
}
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("trajectory blob: {0}")]
    Codec(String),
    #[error("trajectory blob: inflates past {limit} bytes")]
    TooLarge { limit: usize },
    /// One part is past its own bound (`what`: the trajectory's JSON, screenshot ...).
    #[error("trajectory blob: {what} is {len} bytes, past its limit of {limit} bytes")]
    PartTooLarge { what: String, len: usize, limit: usize },
    #[error("trajectory blob: screenshot {digest} is named by no step of the trajectory")]
    Unnamed { digest: String },
    #[error("trajectory blob: screenshot {digest} comes twice")]
    Twice { digest: String },
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

    /// Whether the blob is within `limits` as it would be decoded (the
    /// worker's check before it sends one).
    pub fn within(&self, limits: &Limits) -> Result<(), BlobError> {
        let json = serde_json::to_vec(&self.trajectory).map_err(|e| BlobError::Codec(e.to_string()))?.len();
        if json > limits.json {
            return Err(BlobError::PartTooLarge {
                what: "the trajectory's JSON".into(),
                len: json,
                limit: limits.json,
            });
        }
        let mut total = json + 4;
        for (digest, png) in &self.screenshots {
            if png.len() > limits.screenshot {
                let what = format!("screenshot {digest}");
                return Err(BlobError::PartTooLarge { what, len: png.len(), limit: limits.screenshot });
            }
            total += 68 + png.len();
        }
        if total > limits.total {
            return Err(BlobError::TooLarge { limit: limits.total });
        }
        Ok(())
    }

    /// Reads a blob as a stream, within `limits`: every part's length is
    /// checked before it is read, a screenshot must be named by a step (once)
    /// and match its digest.
    pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Blob, BlobError> {
        let decoder = zstd::stream::read::Decoder::new(bytes).map_err(|e| BlobError::Codec(e.to_string()))?;
        let mut r = Parts { inner: decoder, at: 0, total: limits.total };
        let json_len = r.len("the trajectory's JSON", limits.json)?.ok_or(BlobError::Truncated { at: 0 })?;
        let json = r.bytes(json_len)?;
        let trajectory: Trajectory = serde_json::from_slice(&json).map_err(|e| BlobError::Codec(e.to_string()))?;
        drop(json);
        let named: std::collections::BTreeSet<&str> = trajectory
            .steps
            .iter()
            .filter_map(|s| s.screenshot.as_deref())
            .filter_map(|n| n.strip_prefix("screenshots/")?.strip_suffix(".png"))
            .collect();
        let mut screenshots = BTreeMap::new();
        while let Some(name) = r.name()? {
            let name = String::from_utf8_lossy(&name).into_owned();
            if !named.contains(name.as_str()) {
                return Err(BlobError::Unnamed { digest: name });
            }
            if screenshots.contains_key(&name) {
                return Err(BlobError::Twice { digest: name });
            }
            let what = format!("screenshot {name}");
            let len = r.len(&what, limits.screenshot)?.ok_or(BlobError::Truncated { at: r.at })?;
            let png = r.bytes(len)?;
            if digest(&png) != name {
                return Err(BlobError::Digest { digest: name });
            }
            screenshots.insert(name, png);
        }
        Ok(Blob { trajectory, screenshots })
    }
}

/// The inflating reader of [`Blob::decode`]: where it is, and how much more the whole may inflate.
struct Parts<R> {
    inner: R,
    at: usize,
    total: usize,
}

impl<R: Read> Parts<R> {
    /// Exactly `n` bytes, or as many as there are (`Ok` with fewer at the end).
    fn fill(&mut self, n: usize) -> Result<Vec<u8>, BlobError> {
        if self.at.saturating_add(n) > self.total {
            return Err(BlobError::TooLarge { limit: self.total });
        }
        let mut out = Vec::new();
        // Grows as bytes arrive, never to a declared length the stream does not hold.
        (&mut self.inner).take(n as u64).read_to_end(&mut out).map_err(|e| BlobError::Codec(e.to_string()))?;
        self.at += out.len();
        Ok(out)
    }

    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, BlobError> {
        let at = self.at;
        let out = self.fill(n)?;
        if out.len() < n {
            return Err(BlobError::Truncated { at });
        }
        Ok(out)
    }

    /// A length prefix, refused past `limit` before anything of its part is read; `None` at the end.
    fn len(&mut self, what: &str, limit: usize) -> Result<Option<usize>, BlobError> {
        let at = self.at;
        let b = self.fill(4)?;
        match b.len() {
            0 => return Ok(None),
            4 => {}
            _ => return Err(BlobError::Truncated { at }),
        }
        let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if len > limit {
            return Err(BlobError::PartTooLarge { what: what.to_string(), len, limit });
        }
        Ok(Some(len))
    }

    /// A screenshot's 64-digit name, or `None` at the end of the blob.
    fn name(&mut self) -> Result<Option<Vec<u8>>, BlobError> {
        let at = self.at;
        let b = self.fill(64)?;
        match b.len() {
            0 => Ok(None),
            64 => Ok(Some(b)),
            _ => Err(BlobError::Truncated { at }),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt::AttemptSpec;
    use crate::ids::Uid;

    fn trajectory() -> Trajectory {
        let spec = AttemptSpec {
            uid: "skillshift.gitlab.v1.2".parse::<Uid>().expect("uid"),
            task_timeout_ms: 1,
            ..AttemptSpec::example()
        };
        Trajectory::for_attempt(&spec, &"x".repeat(100_000), "http://x/", "skills")
    }

    fn shot(png: &[u8]) -> (String, Vec<u8>) {
        (digest(png), png.to_vec())
    }

    /// A trajectory whose one step names `names`' screenshots (only the first: one step, one screenshot each).
    fn naming(names: &[&str]) -> Trajectory {
        let mut t = trajectory();
        for (i, n) in names.iter().enumerate() {
            let mut step: crate::trajectory::Step = serde_json::from_value(serde_json::json!({
                "step": i + 1, "url": "http://x/", "title": "", "observation": "", "action": null, "skill": null,
                "last_action_error": null, "llm": null, "duration_ms": 0, "screenshot": null
            }))
            .expect("step");
            step.screenshot = Some(crate::trajectory::screenshot_name(n));
            t.steps.push(step);
        }
        t
    }

    /// The raw layout, compressed, with parts as given (for blobs the encoder would never write).
    fn raw(json: &[u8], shots: &[(&str, &[u8])]) -> Vec<u8> {
        let mut raw = Vec::new();
        push_len(&mut raw, json.len()).expect("len");
        raw.extend_from_slice(json);
        for (name, png) in shots {
            raw.extend_from_slice(name.as_bytes());
            push_len(&mut raw, png.len()).expect("len");
            raw.extend_from_slice(png);
        }
        zstd::bulk::compress(&raw, LEVEL).expect("compress")
    }

    #[test]
    fn a_blob_round_trips_and_compresses_text() {
        let (d, png) = shot(b"\x89PNG fake");
        let blob = Blob { trajectory: naming(&[&d]), screenshots: BTreeMap::from([(d, png)]) };
        let bytes = blob.encode().expect("encode");
        assert!(bytes.len() < 10_000, "100 kB of text compresses: {} bytes", bytes.len());
        assert_eq!(Blob::decode(&bytes, &Limits::DEFAULT).expect("decode"), blob);
        assert!(blob.within(&Limits::DEFAULT).is_ok());
        let small = Limits { total: 1000, ..Limits::DEFAULT };
        assert!(matches!(Blob::decode(&bytes, &small), Err(BlobError::TooLarge { limit: 1000 })));
        assert!(Blob::decode(&bytes[..bytes.len() / 2], &Limits::DEFAULT).is_err());
        let t = trajectory();
        assert_eq!(decompress(&compress(&t).expect("compress"), 1 << 20).expect("decompress"), t);
    }

    #[test]
    fn a_screenshot_under_another_digest_is_refused() {
        let name = "0".repeat(64);
        let blob = Blob { trajectory: naming(&[&name]), screenshots: BTreeMap::from([(name, b"png".to_vec())]) };
        let bytes = blob.encode().expect("encode");
        assert!(matches!(Blob::decode(&bytes, &Limits::DEFAULT), Err(BlobError::Digest { .. })));
    }

    #[test]
    fn a_screenshot_no_step_names_or_one_sent_twice_is_refused() {
        let (d, png) = shot(b"png");
        let unnamed = Blob { trajectory: trajectory(), screenshots: BTreeMap::from([(d.clone(), png.clone())]) };
        let e = Blob::decode(&unnamed.encode().expect("encode"), &Limits::DEFAULT).expect_err("unnamed");
        assert_eq!(e.to_string(), format!("trajectory blob: screenshot {d} is named by no step of the trajectory"));
        let json = serde_json::to_vec(&naming(&[&d])).expect("json");
        let twice = raw(&json, &[(&d, &png), (&d, &png)]);
        assert!(matches!(Blob::decode(&twice, &Limits::DEFAULT), Err(BlobError::Twice { .. })));
    }

    #[test]
    fn each_part_is_refused_past_its_own_bound_before_it_is_inflated() {
        // 100 MiB of zeros for one screenshot, in a blob of a few kB: refused by its declared length.
        let (d, _) = shot(b"whatever");
        let json = serde_json::to_vec(&naming(&[&d])).expect("json");
        let mut head = Vec::new();
        push_len(&mut head, json.len()).expect("len");
        head.extend_from_slice(&json);
        head.extend_from_slice(d.as_bytes());
        push_len(&mut head, 100 << 20).expect("len");
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), LEVEL).expect("encoder");
        std::io::Write::write_all(&mut enc, &head).expect("head");
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..100 {
            std::io::Write::write_all(&mut enc, &zeros).expect("zeros");
        }
        let bomb = enc.finish().expect("finish");
        assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
        match Blob::decode(&bomb, &Limits::DEFAULT) {
            Err(BlobError::PartTooLarge { what, len, limit }) => {
                assert_eq!((what, len, limit), (format!("screenshot {d}"), 100 << 20, MAX_SCREENSHOT_BYTES));
            }
            other => panic!("expected the screenshot refused by its length, got {other:?}"),
        }
        // The JSON's own bound, the same way.
        let small = Limits { json: 100, ..Limits::DEFAULT };
        let e = Blob::decode(&raw(&json, &[]), &small).expect_err("json past 100 bytes");
        assert!(matches!(e, BlobError::PartTooLarge { limit: 100, .. }), "{e}");
        assert!(e.to_string().contains("the trajectory's JSON is"), "{e}");
        // And the worker's check before sending says the same.
        let big = Blob { trajectory: naming(&[]), screenshots: BTreeMap::new() };
        assert!(matches!(big.within(&small), Err(BlobError::PartTooLarge { .. })));
    }
}
