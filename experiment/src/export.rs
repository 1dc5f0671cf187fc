//! A sweep's export on disk: `per_task.jsonl` (every attempt), written
//! atomically, `contract.json` beside it, and `trajectories/` beside it too:
//! one file per attempt that has one, named by its record's `trajectory`
//! field, and each screenshot once, by digest, under `trajectories/screenshots/`
//! (`docs/formats.md`, trajectories).
//!
//! Every non-success record leaves with a `failure_category`: its
//! trajectory's, or, when it has none, the one its outcome and error reason
//! give.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use futures::StreamExt;
use skillshift_common::blob::{self, MAX_BLOB_BYTES, MAX_STORED_JSON_BYTES};
use skillshift_common::ids::SweepId;
use skillshift_common::trajectory::{self, Trajectory};
use skillshift_common::{failure, Outcome, Record};
use skillshift_coordinator::client::{Client, ExportItem};
use skillshift_proto::chunks::Assembler;

/// `contract.json` beside the records file.
pub fn contract_path(out: &Path) -> PathBuf {
    sibling(out, "contract.json")
}

/// `contract.json` beside the records file `out`, as written by [`export`].
pub fn read_contract(out: &Path) -> anyhow::Result<serde_json::Value> {
    let path = contract_path(out);
    let text = skillshift_common::bounded::read_to_string(&path, skillshift_common::bounded::MAX_FILE_BYTES)
        .with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
}

/// `trajectories/` beside the records file.
pub fn trajectories_dir(out: &Path) -> PathBuf {
    sibling(out, trajectory::DIR)
}

fn sibling(out: &Path, name: &str) -> PathBuf {
    out.parent().map(|p| p.join(name)).unwrap_or_else(|| PathBuf::from(name))
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exported {
    pub records: usize,
    pub trajectories: usize,
    pub screenshots: usize,
}

/// The record waiting for its trajectory's chunks before it is written.
struct Pending {
    record: Record,
    chunks: Option<Assembler>,
}

/// Streams a sweep's records into `out` (atomically), its contract and its
/// trajectories beside it; returns the number of records.
pub async fn export(client: &mut Client, id: &SweepId, out: &Path) -> anyhow::Result<usize> {
    Ok(export_all(client, id, out).await?.records)
}

/// As [`export`], with the counts of trajectories and screenshots written.
pub async fn export_all(client: &mut Client, id: &SweepId, out: &Path) -> anyhow::Result<Exported> {
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tdir = trajectories_dir(out);
    let tmp = out.with_extension("jsonl.partial");
    let file = std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut stream = client.export(id).await?;
    let mut contract = None;
    let mut done = Exported::default();
    let mut pending: Option<Pending> = None;
    let mut shot: Option<(String, Assembler)> = None;
    // The models the endpoint says answered, from the trajectories' LLM calls.
    let mut answered = std::collections::BTreeSet::new();
    while let Some(item) = stream.next().await {
        match item? {
            ExportItem::Contract(c) => contract = Some(c),
            ExportItem::Record(r) => {
                if let Some(p) = pending.take() {
                    write_record(&mut w, p.record)?;
                    done.records += 1;
                }
                pending = Some(Pending { record: *r, chunks: None });
            }
            ExportItem::Trajectory { total, offset, data } => {
                let p = pending.as_mut().context("the coordinator sent a trajectory before any record")?;
                if offset == 0 {
                    p.chunks = Some(Assembler::new(total, MAX_BLOB_BYTES)?);
                }
                let chunks = p.chunks.as_mut().context("a trajectory chunk without its start")?;
                if let Some(bytes) = chunks.push(total, offset, &data)? {
                    let t = blob::decompress(&bytes, MAX_STORED_JSON_BYTES)?;
                    p.record.trajectory = Some(write_trajectory(&tdir, &t)?);
                    p.record.failure_category = t.failure_category.clone();
                    answered.extend(t.steps.iter().filter_map(|s| s.llm.as_ref()).map(|l| l.model.clone()));
                    done.trajectories += 1;
                }
            }
            ExportItem::Screenshot { digest, total, offset, data } => {
                if offset == 0 {
                    shot = Some((digest.clone(), Assembler::new(total, MAX_BLOB_BYTES)?));
                }
                let Some((name, chunks)) = shot.as_mut().filter(|(n, _)| *n == digest) else {
                    bail!("a chunk of screenshot {digest} without its start");
                };
                if let Some(png) = chunks.push(total, offset, &data)? {
                    if blob::digest(&png) != *name || name.len() != 64 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
                        bail!("screenshot {name} does not match its bytes");
                    }
                    let path = tdir.join(trajectory::screenshot_name(name));
                    write_file(&path, &png)?;
                    done.screenshots += 1;
                    shot = None;
                }
            }
        }
    }
    if let Some(p) = pending.take() {
        write_record(&mut w, p.record)?;
        done.records += 1;
    }
    w.flush()?;
    drop(w);
    let mut contract = contract.context("the coordinator sent no contract")?;
    // Beside the frozen `model` (what the agent requests, fixed when the sweep was submitted): what answered.
    if let (Some(c), false) = (contract.as_object_mut(), answered.is_empty()) {
        c.insert("models_answered".into(), serde_json::json!(answered));
    }
    std::fs::rename(&tmp, out).with_context(|| format!("writing {}", out.display()))?;
    let cpath = contract_path(out);
    std::fs::write(&cpath, serde_json::to_string_pretty(&contract)? + "\n")
        .with_context(|| format!("writing {}", cpath.display()))?;
    Ok(done)
}

fn write_record(w: &mut impl Write, mut r: Record) -> anyhow::Result<()> {
    if r.failure_category.is_none() && r.outcome() != Outcome::Success {
        r.failure_category = failure::categorize(r.outcome(), r.error.as_deref(), None);
    }
    serde_json::to_writer(&mut *w, &r)?;
    w.write_all(b"\n")?;
    Ok(())
}

/// Writes a trajectory at its file name under the export's directory; returns that name
/// (relative to the records file).
fn write_trajectory(tdir: &Path, t: &Trajectory) -> anyhow::Result<String> {
    let name = Trajectory::file_name(&t.key);
    let rel = name.strip_prefix(&format!("{}/", trajectory::DIR)).unwrap_or(&name);
    write_file(&tdir.join(rel), &serde_json::to_vec_pretty(t)?)?;
    Ok(name)
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}
